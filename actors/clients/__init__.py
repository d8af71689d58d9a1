"""Client processes on Ray: lightweight actors that run the pure client halves against Cohort.

``ConsumerClient`` (``consumer.py``, KIP-848, one or many members per actor) and
``ClassicConsumer`` (``classic_consumer.py``, JoinGroup/SyncGroup) do the I/O for the state
machines in ``protocol/client``: they send what those decide, feed the replies back, and keep
one request in flight to the coordinator. ``timeline.py`` is the file sink both use so that a
killed client's history survives it.
"""
