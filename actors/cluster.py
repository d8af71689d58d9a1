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

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from actors.clients.spawner import ClientSpawner
from actors.runtime.controller import (
    CONTROLLER_NAME,
    NAMESPACE,
    Controller,
    partition_actor_name,
    partition_handles,
)
from actors.runtime.packed import pack, unpack
from actors.runtime.partition import OffsetsPartition
from actors.runtime.placement_nodes import alive_nodes, plan
from actors.runtime.ray_driver import get_unwrapped as _get
from actors.runtime.ray_driver import init_ray, named_actor_exists, wait_released
from actors.runtime.storage_factory import actor_runtime_env
from actors.runtime.storage_marker import claim_marker, normalize_storage_path
from actors.upstream.settings import UpstreamConfigError, UpstreamSettings
from actors.upstream.view import probe
from protocol import messages as m
from protocol.api import group_ids_of, reply_error_codes, routing_error
from protocol.config import CoordinatorConfig
from protocol.errors import COORDINATOR_UNAVAILABLE, CoordinatorError, Errors
from protocol.placement import partition_for
from protocol.retry import backoff_s, next_retries

log = logging.getLogger(__name__)

RETRIABLE = COORDINATOR_UNAVAILABLE
CALL_DEADLINE_S = 60.0
READY_TIMEOUT_S = 120.0
MAX_PARTITIONS = 1000
DEFAULT_PARTITIONS = 4
NOT_RUNNING = (
    "no Cohort cluster is running on this Ray; start one with `cohort start` "
    "(or Cluster.start in Python)"
)


class Cluster(ClientSpawner):
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
        # True when ``start`` found this Cohort already running (a tool that adopted a
        # running service must not stop it when it is done).
        self.adopted = True

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def start(
        cls,
        num_partitions: int | None = 4,
        storage_path: str = "./cohort-data",
        config: CoordinatorConfig | None = None,
        address: str | None = None,
        start_local: bool = True,
        shared_storage: bool = False,
        upstream: str | None = None,
        upstream_config: dict[str, object] | None = None,
    ) -> Cluster:
        """Create (or adopt, when already running) the controller and partitions.

        With no Ray running in this process, attach to the cluster at ``address`` (or the one
        ``RAY_ADDRESS`` / a local ``ray start`` points to), else start a local Ray (unless
        ``start_local`` is False: ``cohort start`` wants actors that outlive it, which a Ray
        started by the command itself would not). A running Cohort is adopted as it is (its
        storage and config win; ``adopted`` says so); a different partition count is refused
        with ``ValueError``; ``num_partitions=None`` takes the running one's, else 4.

        A new Cohort spreads its actors over the Ray nodes (``actors/runtime/placement_nodes``);
        a local ``storage_path`` on more than one alive node is refused with ``ValueError``
        unless ``shared_storage`` says every node mounts it (on one node the actors are pinned
        to it).

        ``upstream``: ``host:port[,host:port]`` of a Kafka-compatible cluster that keeps the
        topics and records (DESIGN.md, "In front of a Kafka-compatible cluster"), reached with
        ``upstream_config`` (``security.protocol``, ``sasl.*``, ``ssl.*``); it must answer
        before anything starts (``UpstreamUnavailable`` names the address and the setting to
        fix otherwise). A running Cohort with another upstream is refused.
        """
        if num_partitions is not None and (
            type(num_partitions) is not int or not 0 < num_partitions <= MAX_PARTITIONS
        ):
            raise ValueError(f"num_partitions must be in 1..{MAX_PARTITIONS}")
        config = config or CoordinatorConfig()
        settings = None
        if upstream is not None:
            settings = UpstreamSettings.parse(upstream, upstream_config)
            asyncio.run(probe(settings))  # unreachable: refused before anything starts
        elif upstream_config:
            raise UpstreamConfigError("upstream_config needs upstream=host:port")
        owns_ray = init_ray(address, start_local)
        adopted = named_actor_exists(CONTROLLER_NAME)
        if num_partitions is None:
            num_partitions = DEFAULT_PARTITIONS
            if adopted:
                controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
                num_partitions = ray.get(controller.info.remote())["num_partitions"]
        storage = normalize_storage_path(storage_path)  # a URL stays a URL
        # Where the actors go; a storage the nodes cannot all read is refused here, before
        # anything is written (placement_nodes.py).
        placement = None if adopted else plan(storage_path, shared_storage, alive_nodes())
        where = placement.options if placement else (lambda _index: {})
        # The storage marker: reachable, writable, and Cohort's (storage_marker.py); a running
        # Cohort keeps the storage (and id) it was started with.
        cluster_id = None if adopted else claim_marker(storage)
        controller = Controller.options(
            name=CONTROLLER_NAME, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
            runtime_env=actor_runtime_env(storage), **where(num_partitions),
        ).remote(num_partitions, storage, config, cluster_id, settings)
        info = ray.get(controller.info.remote())
        if info["num_partitions"] != num_partitions:
            raise ValueError(
                f"a Cohort cluster with {info['num_partitions']} partitions is already running"
            )
        if adopted and upstream is not None and info.get("upstream") != settings.text:
            raise ValueError(f"a Cohort in front of {info.get('upstream') or 'no upstream'} "
                             f"is already running; stop it first to front {settings.text}")
        for p in range(num_partitions):
            OffsetsPartition.options(
                name=partition_actor_name(p),
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
                runtime_env=actor_runtime_env(info["storage_path"]),  # the AWS_* variables
                **where(p),
            ).remote(p, num_partitions, info["storage_path"], info["config"],
                     cluster_id=info.get("cluster_id"))
        cluster = cls(num_partitions, info["config"], info["storage_path"], owns_ray)
        cluster.adopted = adopted
        cluster.wait_ready()
        return cluster

    @classmethod
    def connect(cls, address: str | None = "auto") -> Cluster:
        """Attach to a running Cohort (``address`` may be ``ray://head:10001``)."""
        init_ray(address, start_local=False)
        try:
            controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        except ValueError:
            raise RuntimeError(NOT_RUNNING) from None
        info = ray.get(controller.info.remote())
        try:
            return cls(info["num_partitions"], info["config"], info["storage_path"])
        except ValueError as e:  # a partition actor is missing (killed for good)
            raise RuntimeError(
                f"Cohort is only partly running on this Ray ({e}); `cohort start` starts "
                "what is missing"
            ) from None

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        pending = set(range(self.num_partitions))
        while pending:
            for p in list(pending):
                try:
                    state = ray.get(self._partitions[p].ready.remote(), timeout=10)
                    if state == "active":
                        pending.discard(p)
                    elif state.startswith("failed"):  # for good: say why now, not at the deadline
                        raise RuntimeError(f"partition {p} cannot serve ({state}); see its log")
                except (RayActorError, GetTimeoutError):
                    pass
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"partitions {sorted(pending)} did not load in {timeout_s} s")
            if pending:
                time.sleep(0.1)

    def close(self) -> None:
        """Kill the client actors this handle spawned; the coordinator keeps running."""
        for handle in self._clients:
            try:
                ray.kill(handle, no_restart=True)
            except Exception as e:
                log.debug("kill failed: %s", e)
        self._clients.clear()

    def release(self) -> None:
        """What a tool does when it is done: ``shutdown`` if it started Cohort itself,
        ``close`` if it adopted a running one (a service someone else started stays up)."""
        if self.adopted:
            self.close()
        else:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop every Cohort actor; the data stays in ``storage_path`` for the next start.

        Returns once Ray has released the coordinator actors' names, so that a ``start``
        that follows creates fresh actors instead of finding the dying ones.
        """
        self.close()
        for handle in [*self._partitions, self._controller]:
            try:
                ray.kill(handle, no_restart=True)
            except Exception as e:
                log.debug("kill failed: %s", e)
        names = [CONTROLLER_NAME, *(partition_actor_name(p) for p in range(self.num_partitions))]
        wait_released(names)
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

    def upstream_end_offsets(self, partitions: list[tuple[str, int]]
                             ) -> dict[tuple[str, int], int]:
        """Each partition's end offset upstream; empty without an upstream."""
        if not partitions:
            return {}
        return _get(self._controller.upstream_end_offsets.remote(partitions))

    def upstream(self) -> dict | None:
        """The upstream as the controller last read it (reachable, brokers, topics seen), or
        None without one."""
        return _get(self._controller.upstream_status.remote())

    # ------------------------------------------------------------ Connect connectors

    def create_connector(self, group_id: str, name: str, tasks: int) -> None:
        """Add connector ``name`` running ``tasks`` tasks to Connect group ``group_id`` (the
        controller stands in for Connect's config topic). Refusals: DUPLICATE_RESOURCE (name
        taken), INVALID_CONFIG (tasks not in 1..1,000,000), INVALID_REQUEST (bad name),
        INVALID_GROUP_ID, each as a ``CoordinatorError``."""
        _get(self._controller.create_connector.remote(group_id, name, tasks))

    def alter_connector(self, group_id: str, name: str, tasks: int) -> None:
        """Change a connector's task count; RESOURCE_NOT_FOUND if it does not exist."""
        _get(self._controller.alter_connector.remote(group_id, name, tasks))

    def delete_connector(self, group_id: str, name: str) -> None:
        """Remove a connector; RESOURCE_NOT_FOUND if it does not exist."""
        _get(self._controller.delete_connector.remote(group_id, name))

    def list_connectors(self, group_id: str) -> dict[str, int]:
        """``{connector: task_count}`` of Connect group ``group_id``."""
        return _get(self._controller.list_connectors.remote(group_id))

    def describe_connect(self, group_id: str) -> m.ConnectDescribedGroup:
        """The group's entry of ConnectGroupDescribe (``error_code`` set if it is unknown)."""
        resp = self.call(m.ConnectGroupDescribeRequest(group_ids=[group_id]))
        return resp.groups[0]

    def set_group_config(self, group_id: str, **overrides: int | None) -> None:
        """Dynamic group config (``consumer_session_timeout_ms``, ``..._heartbeat_interval_ms``,
        ``connect_scheduled_rebalance_max_delay_ms``)."""
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
        # A request the partitions refuse unread (routing_error) is not worth hashing: any
        # partition answers it, with INVALID_REQUEST.
        routable = ids and routing_error(request) is None
        return self._call_partition(self.partition_for(ids[0]) if routable else 0, request,
                                    deadline_s)

    def query(self, group_id: str, fn: Callable[[Any], Any]) -> Any:
        """``fn(shard)`` in the partition that owns ``group_id``, between two turns: a pure
        read of the coordinator's state (``fn`` travels to the actor, so it must pickle)."""
        return _get(self.coordinator(group_id).query.remote(fn))

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

    def controller(self):
        """The ``controller`` actor (topics, group configs), as chaos runs and tools reach it."""
        return self._controller

    def kill_controller(self) -> None:
        """Kill the controller; Ray restarts it, it replays its log and pushes its image."""
        ray.kill(self._controller, no_restart=False)

    # ------------------------------------------------------------------ internals

    def _call_partition(self, p: int, request: object, deadline_s: float) -> object:
        deadline = time.monotonic() + deadline_s
        retries = 0
        packed = pack(request)
        while True:
            try:
                # Pickled by us, not by Ray: ~150 µs less a call (actors/runtime/packed.py).
                ref = self._partitions[p].handle_packed.remote(packed)
                resp = unpack(ray.get(ref, timeout=deadline_s))
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
    """A retriable error the reply carries (for any of its groups, in a per-group reply such
    as DescribeGroups while the partition loads), else NONE."""
    return next((c for c in reply_error_codes(resp) if c in RETRIABLE), Errors.NONE)
