"""The coordinator at run time: the actors that own Cohort's state, and what keeps it durable.

``OffsetsPartition`` (``partition.py``) runs one ``__consumer_offsets`` partition's shard with
its mailbox, clock, timers and log; ``Controller`` (``controller.py``) holds topics and group
configs and pushes them to the partitions, and names the actors (``partition_handles``);
``log.py`` and ``compaction.py`` are the append-only log, its snapshots and the load path;
``metrics.py`` reports Kafka's coordinator metrics; ``ray_driver.py`` is how a driver joins
Ray (its token, a quick probe) and sees the named actors go. Clients and tools only talk to
these actors; nothing here knows about them.
"""
