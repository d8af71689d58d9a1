"""``Cluster``'s client half: spawning consumer and Connect worker actors with the session
settings the coordinator will apply to their group.

A mixin so that ``Cluster`` stays a facade of one screenful per concern; it needs the
cluster's ``config``, ``num_partitions``, ``_controller`` and the ``_clients`` list it
appends every spawned handle to (``Cluster.close`` kills them).

Client actors leave their group when the process that spawned them exits
(``owner_watch.py``): they are detached actors watching an ``OwnerAnchor`` this handle owns,
not actors Ray kills with their owner (which would kill them without a goodbye, leaving
their members in the group for a session timeout). ``detached=True`` keeps a client running
after its spawner exits, until it is stopped (``stop()``) or killed (``ray.kill``).
Arguments the actor would refuse are refused here, at the call (``spawn_checks.py``).
"""

from __future__ import annotations

from typing import Any

from actors.clients.owner_watch import owner_anchor
from actors.clients.spawn_checks import check_consumer_spawn, check_worker_spawn
from actors.runtime.controller import NAMESPACE
from actors.runtime.ray_driver import get_unwrapped as _get

# Every client actor is out of Ray's fate-sharing: it either watches its owner's anchor (and
# leaves when the owner exits) or was asked to stay (``detached=True``).
CLIENT_ACTOR = {"namespace": NAMESPACE, "lifetime": "detached"}


class ClientSpawner:
    """Spawns the client actors of a ``Cluster`` (``spawn_consumer(s)``, ``spawn_worker``,
    ``spawn_share_consumer``, ``spawn_streams_member``)."""

    def spawn_consumer(self, group_id: str, topics: list[str] | None = None,
                       protocol: str = "consumer", instance_id: str | None = None,
                       rack_id: str | None = None, detached: bool = False, **options: Any):
        """One consumer actor hosting one member (see ``spawn_consumers`` for many)."""
        return self.spawn_consumers(group_id, 1, topics, protocol, instance_id, rack_id,
                                    detached, **options)

    def spawn_consumers(self, group_id: str, n: int, topics: list[str] | None = None,
                        protocol: str = "consumer", instance_id: str | None = None,
                        rack_id: str | None = None, detached: bool = False, **options: Any):
        """One ``num_cpus=0`` actor hosting ``n`` members whose heartbeats share one call.

        In front of an upstream the members read their partitions' real records from their
        committed offsets and commit after ``process(records)`` (a function of a list of
        ``ConsumerRecord``, run in the actor) returned; see ``actors/clients/real_records.py``.

        ``protocol="classic"`` spawns a JoinGroup/SyncGroup consumer instead (one member per
        actor; ``assignors=("range",)`` eager by default, ``("cooperative-sticky",)`` for
        the cooperative protocol, ``join_reason="restart"`` for a bounced static member).
        The members leave the group when this process exits, unless ``detached``.
        """
        check_consumer_spawn(protocol, n, topics, options)
        if options.get("process") is not None:
            self._check_real_records(options, reads=protocol == "consumer"
                                     and options.get("stream", True) is not False)
        if protocol == "classic":
            from actors.clients.classic_consumer import ClassicConsumer

            options.setdefault("session_timeout_ms", self._classic_session_timeout_ms(group_id))
            handle = ClassicConsumer.options(**CLIENT_ACTOR).remote(
                group_id, self.num_partitions, topics=topics, instance_id=instance_id,
                rack_id=rack_id, **self._owned(detached, options),
            )
            self._clients.append(handle)
            return handle
        from actors.clients.consumer import ConsumerClient

        handle = ConsumerClient.options(**CLIENT_ACTOR).remote(
            group_id, self.num_partitions, n=n, topics=topics, instance_id=instance_id,
            rack_id=rack_id, session_timeout_ms=self._session_timeout_ms(group_id),
            **self._owned(detached, options),
        )
        self._clients.append(handle)
        return handle

    def spawn_worker(self, group_id: str, protocol: str = "connect",
                     instance_id: str | None = None, assignor_versions: tuple[int, int] = (1, 2),
                     detached: bool = False, **options: Any):
        """One ``num_cpus=0`` ``ConnectWorker`` actor: a Connect worker of ``group_id`` running
        the synthetic work it is given. ``protocol="connect"``: ConnectGroupHeartbeat (seed
        004), its assignor speaking metadata versions ``assignor_versions``; ``"classic"``:
        JoinGroup/SyncGroup (``connect_protocol`` sessioned by default, compatible, eager; no
        static membership, as Kafka Connect). A departed worker's work is held for the group's
        ``connect.scheduled.rebalance.max.delay.ms`` unless ``scheduled_rebalance_max_delay_ms``
        is given. Other options: ``worker_id``, ``session_timeout_ms``,
        ``rebalance_timeout_ms``, ``heartbeat_interval_ms``, ``timeline_path``,
        ``records_per_s``. The worker leaves the group when this process exits, unless
        ``detached``. ``ValueError`` at the call for ``assignor_versions`` outside what the
        Connect assignor implements (metadata versions 1..2, minimum <= maximum)."""
        check_worker_spawn(protocol, assignor_versions, options)
        from actors.clients.connect_worker import ConnectWorker

        cfg = _get(self._controller.group_config.remote(group_id))
        options.setdefault(
            "scheduled_rebalance_max_delay_ms",
            cfg.effective_scheduled_rebalance_max_delay_ms(self.config),
        )
        if protocol == "connect":
            options.setdefault("session_timeout_ms", self.config.group_connect_session_timeout_ms)
        elif protocol == "classic":
            options.setdefault("session_timeout_ms", self._bounded_classic_session_ms(
                self.config.group_connect_session_timeout_ms))
            options.setdefault("heartbeat_interval_ms",
                               self.config.group_connect_heartbeat_interval_ms)
        handle = ConnectWorker.options(**CLIENT_ACTOR).remote(
            group_id, self.num_partitions, protocol=protocol, instance_id=instance_id,
            assignor_versions=tuple(assignor_versions), **self._owned(detached, options),
        )
        self._clients.append(handle)
        return handle

    def spawn_share_consumer(self, group_id: str, topics: list[str], detached: bool = False,
                             **options: Any):
        """One ``num_cpus=0`` ``ShareConsumer`` actor: a share group member (KIP-932) that
        acquires records and acknowledges them: the synthetic stream's, or in front of an
        upstream its real records, handed to ``process(records)`` (run in the actor) before
        they are acknowledged. Options:
        ``member_id``, ``max_records``, ``records_per_s`` / ``batch_interval_ms`` /
        ``stream_anchor_ms`` (the stream; the gateway's by default), ``timeline_path``. The
        member closes its share session and leaves the group when this process exits, unless
        ``detached``."""
        if not topics or any(not isinstance(t, str) or not t for t in topics):
            raise ValueError("a share consumer needs topics: a list of topic names")
        if options.get("process") is not None:
            self._check_real_records(options)
        from actors.clients.share_consumer import ShareConsumer

        handle = ShareConsumer.options(**CLIENT_ACTOR).remote(
            group_id, self.num_partitions, list(topics), **self._owned(detached, options))
        self._clients.append(handle)
        return handle

    def spawn_streams_member(self, group_id: str, source: str, detached: bool = False,
                             **options: Any):
        """One ``num_cpus=0`` ``StreamsMember`` actor: a streams group member (KIP-1071) whose
        topology is a word count over ``source`` (two subtopologies, the second stateful, so
        the group's ``streams.num.standby.replicas`` places standbys), reconciling its tasks
        as Kafka Streams does without processing records. Options: ``member_id``,
        ``process_id`` (members of one Streams process share it), ``instance_id``,
        ``timeline_path``, ``session_timeout_ms`` (the group's by default: the member gives
        its tasks up by that deadline on its own). The member leaves the group when this
        process exits, unless ``detached``."""
        if not isinstance(source, str) or not source:
            raise ValueError("a streams member needs a source topic name")
        from actors.clients.streams_member import StreamsMember

        if options.get("session_timeout_ms") is None:
            cfg = _get(self._controller.group_config.remote(group_id))
            override = getattr(cfg, "streams_session_timeout_ms", None)
            options["session_timeout_ms"] = (override if override is not None
                                             else self.config.group_streams_session_timeout_ms)
        handle = StreamsMember.options(**CLIENT_ACTOR).remote(
            group_id, self.num_partitions, source, **self._owned(detached, options))
        self._clients.append(handle)
        return handle

    def _check_real_records(self, options: dict[str, Any], reads: bool = True) -> None:
        """``process`` handles real records: a KIP-848 or share consumer that reads, in front
        of an upstream."""
        if not callable(options["process"]):
            raise ValueError("process must be a function taking a list of records")
        if not reads:
            raise ValueError("process= is for KIP-848 consumers that read (protocol='consumer', "
                             "stream on) and share consumers")
        if _get(self._controller.upstream_settings.remote()) is None:
            raise ValueError("process= hands the upstream's records to a function: this Cohort "
                             "has no upstream (Cluster.start(upstream=...)); without one its "
                             "consumers process the synthetic stream")

    def _owned(self, detached: bool, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` plus the anchor whose death means "your spawner exited"."""
        if detached:
            return options
        anchor = getattr(self, "_owner_anchor", None)
        if anchor is None:
            anchor = self._owner_anchor = owner_anchor()
        return dict(options, owner=anchor)

    def _bounded_classic_session_ms(self, wanted: int) -> int:
        cfg = self.config
        return min(max(wanted, cfg.group_min_session_timeout_ms), cfg.group_max_session_timeout_ms)

    def _classic_session_timeout_ms(self, group_id: str) -> int:
        """The consumer groups' session timeout, within the broker's classic bounds."""
        return self._bounded_classic_session_ms(self._session_timeout_ms(group_id))

    def _session_timeout_ms(self, group_id: str) -> int:
        """The session timeout the coordinator applies to the group (its override, if set)."""
        cfg = _get(self._controller.group_config.remote(group_id))
        return cfg.effective_session_timeout_ms(self.config)
