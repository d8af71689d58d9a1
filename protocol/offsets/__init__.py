"""Committed offsets: OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups and retention
(``rules``; who may commit is each row's answer), the retention timer key and the messages."""
