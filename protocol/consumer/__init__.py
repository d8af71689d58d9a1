"""KIP-848 consumer groups (seed 000): the group and member model built from records, the
heartbeat rules in three steps (``rules``: admit, bump once per turn, complete),
the members' deadlines (``sessions``), the current-assignment reconciler (the kernel's), the
target-assignment builder (``target_assignment``), client-side assignment
(``client_assignment``), describe, validation, RE2 subscriptions, and the messages."""
