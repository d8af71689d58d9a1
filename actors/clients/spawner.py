"""``Cluster``'s client half: spawning consumer and Connect worker actors with the session
settings the coordinator will apply to their group.

A mixin so that ``Cluster`` stays a facade of one screenful per concern; it needs the
cluster's ``config``, ``num_partitions``, ``_controller`` and the ``_clients`` list it
appends every spawned handle to (``Cluster.close`` kills them).
"""

from __future__ import annotations

from typing import Any

from actors.runtime.controller import NAMESPACE
from actors.runtime.ray_driver import get_unwrapped as _get


class ClientSpawner:
    """Spawns the client actors of a ``Cluster`` (``spawn_consumer(s)``, ``spawn_worker``)."""

    def spawn_consumer(self, group_id: str, topics: list[str] | None = None,
                       protocol: str = "consumer", instance_id: str | None = None,
                       rack_id: str | None = None, **options: Any):
        """One consumer actor hosting one member (see ``spawn_consumers`` for many)."""
        return self.spawn_consumers(group_id, 1, topics, protocol, instance_id, rack_id, **options)

    def spawn_consumers(self, group_id: str, n: int, topics: list[str] | None = None,
                        protocol: str = "consumer", instance_id: str | None = None,
                        rack_id: str | None = None, **options: Any):
        """One ``num_cpus=0`` actor hosting ``n`` members whose heartbeats share one call.

        ``protocol="classic"`` spawns a JoinGroup/SyncGroup consumer instead (one member per
        actor; ``assignors=("range",)`` eager by default, ``("cooperative-sticky",)`` for
        the cooperative protocol, ``join_reason="restart"`` for a bounced static member).
        """
        if protocol == "classic":
            if n != 1:
                raise ValueError("a classic consumer actor hosts exactly one member")
            from actors.clients.classic_consumer import ClassicConsumer

            options.setdefault("session_timeout_ms", self._classic_session_timeout_ms(group_id))
            handle = ClassicConsumer.options(namespace=NAMESPACE).remote(
                group_id, self.num_partitions, topics=topics, instance_id=instance_id,
                rack_id=rack_id, **options,
            )
            self._clients.append(handle)
            return handle
        if protocol != "consumer":
            raise ValueError(f"unknown protocol {protocol!r}: 'consumer' or 'classic'")
        from actors.clients.consumer import ConsumerClient

        handle = ConsumerClient.options(namespace=NAMESPACE).remote(
            group_id, self.num_partitions, n=n, topics=topics, instance_id=instance_id,
            rack_id=rack_id, session_timeout_ms=self._session_timeout_ms(group_id), **options,
        )
        self._clients.append(handle)
        return handle

    def spawn_worker(self, group_id: str, protocol: str = "connect",
                     instance_id: str | None = None, assignor_versions: tuple[int, int] = (1, 2),
                     **options: Any):
        """One ``num_cpus=0`` ``ConnectWorker`` actor: a Connect worker of ``group_id`` running
        the synthetic work it is given. ``protocol="connect"``: ConnectGroupHeartbeat (seed
        004), its assignor speaking metadata versions ``assignor_versions``; ``"classic"``:
        JoinGroup/SyncGroup (``connect_protocol`` sessioned by default, compatible, eager; no
        static membership, as Kafka Connect). A departed worker's work is held for the group's
        ``connect.scheduled.rebalance.max.delay.ms`` unless ``scheduled_rebalance_max_delay_ms``
        is given. Other options: ``worker_id``, ``session_timeout_ms``,
        ``rebalance_timeout_ms``, ``heartbeat_interval_ms``, ``timeline_path``,
        ``records_per_s``."""
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
        else:
            raise ValueError(f"unknown protocol {protocol!r}: 'connect' or 'classic'")
        handle = ConnectWorker.options(namespace=NAMESPACE).remote(
            group_id, self.num_partitions, protocol=protocol, instance_id=instance_id,
            assignor_versions=tuple(assignor_versions), **options,
        )
        self._clients.append(handle)
        return handle

    def spawn_share_consumer(self, group_id: str, topics: list[str], **options: Any):
        """One ``num_cpus=0`` ``ShareConsumer`` actor: a share group member (KIP-932) that
        acquires records of the synthetic stream and acknowledges them. Options:
        ``member_id``, ``max_records``, ``records_per_s`` / ``batch_interval_ms`` /
        ``stream_anchor_ms`` (the stream; the gateway's by default)."""
        from actors.clients.share_consumer import ShareConsumer

        handle = ShareConsumer.options(namespace=NAMESPACE).remote(
            group_id, self.num_partitions, list(topics), **options)
        self._clients.append(handle)
        return handle

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
