"""``Cluster``: start, find and talk to Cohort's actors on a Ray cluster.

A ``Cluster`` is a thin handle; the state lives in the detached actors (``controller`` and
``offsets-<p>`` in the ``cohort`` namespace), so any number of drivers or Ray clients can
hold one, and a handle made by ``Cluster.connect`` in a new process works like the original.

``call`` routes a request to the partition that owns its group, as Kafka's clients find
their coordinator, and retries while the coordinator is moving, loading or dead
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, an unavailable
actor), up to a deadline, backing off as every Cohort client does (``protocol/retry.py``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from actors.runtime.controller import (
    CONTROLLER_NAME,
    NAMESPACE,
    Controller,
    partition_actor_name,
    partition_handles,
)
from actors.runtime.partition import OffsetsPartition
from protocol import messages as m
from protocol.api import group_ids_of
from protocol.config import CoordinatorConfig
from protocol.errors import COORDINATOR_UNAVAILABLE, CoordinatorError, Errors
from protocol.placement import partition_for
from protocol.retry import backoff_s, next_retries

log = logging.getLogger(__name__)

RETRIABLE = COORDINATOR_UNAVAILABLE
CALL_DEADLINE_S = 60.0
READY_TIMEOUT_S = 120.0
MAX_PARTITIONS = 1000


class Cluster:
    """A driver's handle on a running Cohort: start or find its actors, route requests to them.

    It exists so that a user (a driver, a Ray client, a test, the ``cohort`` CLI) never has
    to know which actor owns a group or what to do while that actor restarts. It holds no
    state of its own beyond actor handles, so any number of handles, in any process, behave
    alike. Guarantees: a request reaches the partition that owns its group (Kafka's placement);
    ``call`` retries, with backoff and up to a deadline, while the coordinator is moving,
    loading or dead, and returns the last reply or raises ``TimeoutError``; the controller's
    refusals surface as ``CoordinatorError``.
    """

    def __init__(self, num_partitions: int, config: CoordinatorConfig, storage_path: str,
                 owns_ray: bool = False) -> None:
        self.num_partitions = num_partitions
        self.config = config
        self.storage_path = storage_path
        self._owns_ray = owns_ray
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._partitions = partition_handles(num_partitions)
        self._clients: list[Any] = []

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def start(
        cls,
        num_partitions: int = 4,
        storage_path: str = "./cohort-data",
        config: CoordinatorConfig | None = None,
        address: str | None = None,
    ) -> Cluster:
        """Create (or adopt, when already running) the controller and partitions.

        With no Ray running in this process, attach to the cluster at ``address`` (or the one
        ``RAY_ADDRESS`` / a local ``ray start`` points to), else start a local Ray.
        """
        if type(num_partitions) is not int or not 0 < num_partitions <= MAX_PARTITIONS:
            raise ValueError(f"num_partitions must be in 1..{MAX_PARTITIONS}")
        config = config or CoordinatorConfig()
        owns_ray = _init_ray(address)
        storage = os.path.abspath(storage_path)
        controller = Controller.options(
            name=CONTROLLER_NAME, namespace=NAMESPACE, lifetime="detached", get_if_exists=True
        ).remote(num_partitions, storage, config)
        info = ray.get(controller.info.remote())
        if info["num_partitions"] != num_partitions:
            raise ValueError(
                f"a Cohort cluster with {info['num_partitions']} partitions is already running"
            )
        for p in range(num_partitions):
            OffsetsPartition.options(
                name=partition_actor_name(p),
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
            ).remote(p, num_partitions, info["storage_path"], info["config"])
        cluster = cls(num_partitions, info["config"], info["storage_path"], owns_ray)
        cluster.wait_ready()
        return cluster

    @classmethod
    def connect(cls, address: str | None = "auto") -> Cluster:
        """Attach to a running Cohort (``address`` may be ``ray://head:10001``)."""
        _init_ray(address, start_local=False)
        try:
            controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        except ValueError:
            raise RuntimeError("no Cohort cluster is running here; use Cluster.start") from None
        info = ray.get(controller.info.remote())
        return cls(info["num_partitions"], info["config"], info["storage_path"])

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        pending = set(range(self.num_partitions))
        while pending:
            for p in list(pending):
                try:
                    if ray.get(self._partitions[p].ready.remote(), timeout=10) == "active":
                        pending.discard(p)
                except (RayActorError, GetTimeoutError):
                    pass
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"partitions {sorted(pending)} did not load in {timeout_s} s")
            if pending:
                time.sleep(0.1)

    def shutdown(self) -> None:
        """Stop every Cohort actor; the data stays in ``storage_path`` for the next start."""
        for handle in [*self._clients, *self._partitions, self._controller]:
            try:
                ray.kill(handle, no_restart=True)
            except Exception as e:
                log.debug("kill failed: %s", e)
        self._clients.clear()
        if self._owns_ray:
            ray.shutdown()

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, num_partitions: int,
                     racks: list[list[str]] | None = None) -> str:
        return _get(self._controller.create_topic.remote(name, num_partitions, racks))

    def add_partitions(self, name: str, total: int,
                       racks: list[list[str]] | None = None) -> None:
        _get(self._controller.add_partitions.remote(name, total, racks))

    def delete_topic(self, name: str) -> None:
        _get(self._controller.delete_topic.remote(name))

    def topics(self) -> list:
        return _get(self._controller.topics.remote())

    def set_group_config(self, group_id: str, **overrides: int | None) -> None:
        """Dynamic group config (``consumer_session_timeout_ms``, ``..._heartbeat_interval_ms``)."""
        _get(self._controller.set_group_config.remote(group_id, **overrides))

    # ------------------------------------------------------------------ routing

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def coordinator(self, group_id: str):
        return self._partitions[self.partition_for(group_id)]

    def partition(self, p: int):
        return self._partitions[p]

    def partitions(self) -> list:
        """Every offsets partition actor, ``offsets-0`` first (what an export reads)."""
        return list(self._partitions)

    def call(self, request: object, deadline_s: float = CALL_DEADLINE_S) -> object:
        """Send ``request`` to its group's coordinator; retry while it moves or loads."""
        ids = group_ids_of(request)
        return self._call_partition(self.partition_for(ids[0] if ids else ""), request, deadline_s)

    def describe(self, group_id: str) -> m.DescribedGroup:
        """The group's entry of ConsumerGroupDescribe (``error_code`` set if it is unknown)."""
        resp = self.call(m.ConsumerGroupDescribeRequest(group_ids=[group_id]))
        return resp.groups[0]

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list:
        req = m.ListGroupsRequest(states_filter=list(states), types_filter=list(types))
        out = []
        for p in range(self.num_partitions):
            resp = self._call_partition(p, req, CALL_DEADLINE_S)
            if resp.error_code != Errors.NONE:
                raise CoordinatorError(Errors(resp.error_code), resp.error_message)
            out += resp.groups
        return sorted(out, key=lambda g: g.group_id)

    def wait_stable(self, group_id: str, members: int | None = None,
                    timeout_s: float = 60.0) -> m.DescribedGroup:
        """Poll describe until the group is stable (with ``members`` members, if given)."""
        deadline = time.monotonic() + timeout_s
        while True:
            g = self.describe(group_id)
            if g.error_code == Errors.NONE and g.group_state == "stable" and (
                members is None or len(g.members) == members
            ):
                return g
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id} not stable after {timeout_s} s: "
                                   f"{g.group_state}, {len(g.members)} members")
            time.sleep(0.2)

    # ------------------------------------------------------------------ export

    def export(self, spark: Any) -> dict:
        """The coordinator's state as Spark DataFrames (``actors.tools.export``): groups, members,
        target_assignment, current_assignment, offsets, rebalances."""
        from actors.tools.export import export_to_spark

        return export_to_spark(self._partitions, spark)

    # ------------------------------------------------------------------ Kafka wire gateway

    def start_gateway(self, port: int = 9092, host: str = "127.0.0.1", **options: Any) -> str:
        """Serve Kafka's protocol on ``host:port`` (``actors/gateway``); ``bootstrap.servers``.
        ``options``: SASL, TLS, authorizer and stream settings (``GatewayOptions``)."""
        from actors.gateway.launch import start_gateway

        return start_gateway(self.num_partitions, self.config, port, host, **options)

    def stop_gateway(self) -> None:
        from actors.gateway.launch import stop_gateway

        stop_gateway()

    # ------------------------------------------------------------------ chaos

    def kill_partition(self, p: int) -> None:
        """Kill ``offsets-<p>``; Ray restarts it and it reloads its log."""
        ray.kill(self._partitions[p], no_restart=False)

    # ------------------------------------------------------------------ clients

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

    def _classic_session_timeout_ms(self, group_id: str) -> int:
        """The consumer groups' session timeout, within the broker's classic bounds."""
        wanted = self._session_timeout_ms(group_id)
        cfg = self.config
        return min(max(wanted, cfg.group_min_session_timeout_ms), cfg.group_max_session_timeout_ms)

    def _session_timeout_ms(self, group_id: str) -> int:
        """The session timeout the coordinator applies to the group (its override, if set)."""
        cfg = _get(self._controller.group_config.remote(group_id))
        return cfg.effective_session_timeout_ms(self.config)

    # ------------------------------------------------------------------ internals

    def _call_partition(self, p: int, request: object, deadline_s: float) -> object:
        deadline = time.monotonic() + deadline_s
        retries = 0
        while True:
            try:
                resp = ray.get(self._partitions[p].handle.remote(request), timeout=deadline_s)
                if _error_of(resp) not in RETRIABLE:
                    return resp
            except (RayActorError, GetTimeoutError) as e:
                resp = None
                log.debug("offsets-%d unavailable: %s", p, e)
            wait_s = backoff_s(retries)
            if time.monotonic() + wait_s > deadline:
                if resp is not None:
                    return resp
                raise TimeoutError(f"offsets-{p} did not answer within {deadline_s} s")
            time.sleep(wait_s)
            retries = next_retries(retries)


def _error_of(resp: object) -> int:
    if isinstance(resp, m.ConsumerGroupDescribeResponse):
        codes = [g.error_code for g in resp.groups]
        return next((c for c in codes if c in RETRIABLE), Errors.NONE)
    return getattr(resp, "error_code", Errors.NONE)


def _get(ref) -> Any:
    """``ray.get`` that raises a refusal as the plain ``CoordinatorError`` it is."""
    try:
        return ray.get(ref)
    except RayTaskError as e:
        if isinstance(e.cause, CoordinatorError):
            raise e.cause from None
        raise


def _have_token() -> bool:
    return bool(
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    )


def _init_ray(address: str | None, start_local: bool = True) -> bool:
    """Join the Ray this process should use; True when we started a local one ourselves."""
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    if target.startswith("ray://") and _have_token() and "RAY_AUTH_MODE" not in os.environ:
        # Ray >= 2.59 clusters require a token by default; the Ray client sends the one it
        # finds (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) only in token mode.
        # Ray reads the mode when it is imported, so its config is re-read after the switch.
        os.environ["RAY_AUTH_MODE"] = "token"
        from ray._raylet import Config

        Config.initialize("")
    try:
        ray.init(address=target, namespace=NAMESPACE, log_to_driver=False)
        return False
    except ConnectionError:
        if not start_local or address is not None:
            raise
    ray.init(namespace=NAMESPACE, include_dashboard=False, log_to_driver=False)
    return True
