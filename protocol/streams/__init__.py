"""KIP-1071 streams groups (Kafka 4.4): the group type ``streams`` on the modern kernel. A
Kafka Streams application's instances join with their topology; the coordinator configures
it against the topics (``topology``: missing source topics, partition counts, the internal
topics to create), assigns tasks (active, standby, warm-up) with the sticky task assignor of
``assignors.streams``, and moves each member to its target so that no task is ever active on
two members (``reconcile``). The messages, records, group and member model, heartbeat rules,
describe, the wire translation and the row."""
