"""The client halves, as pure objects: what a group member sends, when, and what it owns.

``ConsumerMemberClient`` (``consumer.py``, KIP-848 heartbeats and reconciliation) and
``ClassicMemberClient`` (``classic.py``, the JoinGroup/SyncGroup state machine, with its
bookkeeping in ``classic_state.py`` and the leader's assignment in ``classic_leader.py``)
decide requests and read replies but never send, sleep or read a clock: the host passes the
time in (``now_s``). ``StreamProgress`` (``stream_progress.py``) is a member's synthetic
consumption and its offset commits; ``timeline.py`` is the bounded history of ownership both
members record. Hosts live in ``actors/clients``; tests drive these against a real shard.
"""
