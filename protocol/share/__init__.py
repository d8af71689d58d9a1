"""KIP-932 share groups (Kafka 4.2): the group type ``share`` on the modern kernel. Its members
share partitions (the simple share assignor); each (group, topic, partition) keeps the state of
its in-flight records (``partition_state``): acquired under a time lock, acknowledged
(ACCEPT / RELEASE / REJECT), redelivered when a lock expires, archived after the delivery
limit. The messages, the group and member model, the heartbeat rules, ShareFetch /
ShareAcknowledge, describe and the share-offset admin APIs."""
