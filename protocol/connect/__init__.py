"""Kafka Connect worker groups on the new protocol (seed 004): the group type ``connect``,
whose units are connectors and tasks. Mirrors ``protocol.consumer``: the messages, the group
and member model built from records, the heartbeat rules, reconciliation, client-side
assignment (PrepareAssignment / InstallAssignment) and describe."""
