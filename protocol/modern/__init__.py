"""The kernel every KIP-848-style group shares (consumer, connect; next, share groups).

A group type is an adapter over this kernel: its records' classes, its unit of work
(partitions, connectors and tasks), its validation and its assignor. The kernel holds what
the types have in common: the member as its two records (``member``), the replay of the
member/target/current records and what follows from them (``group``), the reconciler
(``reconciler``), the session and revocation deadlines (``sessions``), the once-per-turn epoch
bump and target computation (``epochs``), target records (``target``), the heartbeat rules
both types follow (``rules``: static membership, the lost-response rule, join, leave, fence)
and the shared parts of validation, describe and client-side assignment.
"""
