"""The client halves, as pure objects: what a group member sends, when, and what it owns.

Four halves, two cores. ``ConsumerMemberClient`` (``consumer.py``) and ``ConnectWorkerClient``
(``connect_worker.py``) are thin rows over ``ModernMemberClient`` (``modern_member.py``), the
KIP-848 heartbeat loop and reconciliation generic over the units assigned;
``ClassicMemberClient`` (``classic.py``, its leader in ``classic_leader.py``) and
``ClassicConnectWorkerClient`` (``classic_connect.py``, its leader in
``classic_connect_leader.py``) are thin rows over ``ClassicGroupMember`` (``classic_member.py``),
the JoinGroup/SyncGroup state machine. Both cores stand on ``GroupMember`` (``member.py``: one
request in flight, the fence rule) and an ``Ownership`` of their units (``ownership.py``;
Connect's work in ``connect_ownership.py``). Client-side assignment is ``assignment_job.py``
with the two ``Flavour``s of ``client_assignors.py``.

They decide requests and read replies but never send, sleep or read a clock: the host passes
the time in (``now_s``). ``StreamProgress`` (``stream_progress.py``) is a member's synthetic
consumption and its offset commits, ``TaskWork`` (``task_work.py``) a worker's synthetic work;
``timeline.py`` is the bounded history of ownership every member records. Hosts live in
``actors/clients``; tests drive these against a real shard.
"""
