"""Committed offsets: OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups and retention
(``rules``), who may commit (``commit_checks``), the retention timer key and the messages."""
