"""The controller: topics, Connect connectors and dynamic group configs, durable, pushed to
every partition.

Kafka keeps topics and configs in its metadata log (KRaft), and Kafka Connect keeps its
connectors in its config topic; here one detached actor owns all three (Cohort's stand-in for
the config topic: the coordinator sees connector changes directly, seed 004) and writes them
to its own log (a ``PartitionStorage`` named ``controller`` under ``storage_path``, on local
disk or an object store: ``storage_factory``), one change at a time, each write in a worker
thread so the event loop keeps answering reads (``actors.runtime.one_change``). Every change bumps a
version and is pushed to each ``OffsetsPartition``; a partition that was down at push time
pulls the current image when it loads, and ignores any push older than what it has. Group
configs are keyed by group id only (seed 000): they can be set before the group exists and
outlive its deletion.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import os
import re
import uuid
from dataclasses import dataclass

import msgpack
import ray

from actors.runtime.controller_security import GATEWAY_NAME, SecurityStore
from actors.runtime.one_change import ChangeLock, one_change_at_a_time
from actors.runtime.storage import PartitionStorage
from actors.runtime.storage_factory import open_storage
from actors.upstream.settings import UpstreamSettings
from actors.upstream.topics import UpstreamTopics
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import ConnectorMetadata, MetadataImage, TopicMetadata

log = logging.getLogger(__name__)

NAMESPACE = "cohort"
CONTROLLER_NAME = "controller"
# Kafka's topic name rule (Topic.validate): legal characters and at most 249 of them.
TOPIC_NAME_MAX_CHARS = 249
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_PARTITIONS_PER_TOPIC = 1_000_000
# Connect connectors: a name is any text Kafka Connect accepts in a REST path, bounded here;
# a connector runs 1..MAX_TASKS_PER_CONNECTOR tasks (Connect's tasks.max is at least 1).
CONNECTOR_NAME_MAX_CHARS = 249
MAX_TASKS_PER_CONNECTOR = 1_000_000
# How long a change waits for the partitions to take it before returning anyway.
PUSH_TIMEOUT_S = 5.0
SNAPSHOT_AFTER_BYTES = 1 << 20
# How long a topic change made upstream may take to show in the upstream's Metadata: a
# Kafka broker's image trails its controller, by more than 10 s on a loaded machine (CI saw
# a topic Kafka 4.4 had created still missing from its Metadata then). Only a change that
# never shows waits this long.
UPSTREAM_SETTLE_S = 30.0


def partition_actor_name(p: int) -> str:
    return f"offsets-{p}"


def partition_handles(num_partitions: int) -> list[ray.actor.ActorHandle]:
    """The running ``offsets-<p>`` actors, ``p`` in ``range(num_partitions)``, found by name:
    what any process attached to the Ray cluster needs to reach every partition, with no
    ``Cluster`` at hand. Raises ``ValueError`` if one is not running."""
    return [
        ray.get_actor(partition_actor_name(p), namespace=NAMESPACE) for p in range(num_partitions)
    ]


@dataclass(frozen=True)
class ControllerImage:
    """What a partition needs from the controller; ``version`` only ever grows."""

    version: int
    metadata: MetadataImage
    group_configs: dict[str, GroupConfig]


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class Controller(SecurityStore, ChangeLock):
    """The cluster's metadata: topics, Connect connectors, dynamic group configs, users and
    ACLs, and the partition count.

    It exists because a group's rules need facts no single partition owns (which topics and
    partitions exist, a group's config set before the group exists) and Kafka keeps those in
    its metadata log, apart from the group coordinator. Guarantees: every change is durable
    (its own log) before it is applied or pushed; each change bumps a version, and a
    partition never applies an image older than the one it has and pulls the latest when it
    loads (a push is best effort, bounded by ``PUSH_TIMEOUT_S``); bad input is refused with a
    Kafka error (``CoordinatorError``) and changes nothing.
    """

    def __init__(self, num_partitions: int, storage_path: str, config: CoordinatorConfig,
                 cluster_id: str | None = None,
                 upstream: UpstreamSettings | None = None) -> None:
        self.num_partitions = num_partitions
        self.storage_path = storage_path
        self.cluster_id = cluster_id
        self.config = config
        self._topics: dict[str, TopicMetadata] = {}
        # Embedded topics' configs as created (a streams group's internal topics name theirs:
        # cleanup.policy=compact for a changelog); in front of an upstream, the upstream's.
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._configs: dict[str, GroupConfig] = {}
        # Connect group id -> {connector name: task count}
        self._connectors: dict[str, dict[str, int]] = {}
        self._version = 0
        self._init_security()  # ACLs and users: actors/runtime/controller_security.py
        self._log: PartitionStorage = open_storage(storage_path, "controller", cluster_id)
        loaded = self._log.load()
        for data in loaded.snapshot:
            self._replay(data)
        for batch in loaded.batches:
            for data in batch:
                self._replay(data)
        # Back from a kill, a push of the change being written may have been cut short: push
        # the image now, so that every running partition catches up without waiting for the
        # next change (a partition that is loading pulls it; at first start none is running).
        self._push_on_start = asyncio.get_running_loop().create_task(self._push())
        # In front of an upstream, the topics are the upstream's: followed by polling, and
        # at once after a change made through Cohort (``upstream_topics``).
        self._upstream = UpstreamTopics(upstream) if upstream is not None else None
        self._following = None
        if self._upstream is not None:
            self._following = asyncio.get_running_loop().create_task(self._follow_upstream())

    # ---------------------------------------------------------------- cluster info

    def info(self) -> dict:
        return {
            "num_partitions": self.num_partitions,
            "storage_path": self.storage_path,
            "cluster_id": self.cluster_id,
            "config": self.config,
            "version": self._version,
            "topics": len(self._topics),
            "group_configs": len(self._configs),
            "upstream": self._upstream.settings.text if self._upstream else None,
            "pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
        }

    def image(self) -> ControllerImage:
        connectors = [
            ConnectorMetadata(group_id, name, tasks)
            for group_id, of_group in self._connectors.items()
            for name, tasks in of_group.items()
        ]
        return ControllerImage(
            self._version, MetadataImage(self._topics.values(), connectors), dict(self._configs)
        )

    # ------------------------------------------------------------------- upstream

    def upstream_settings(self) -> UpstreamSettings | None:
        """How to reach the upstream (what the gateway relays to), or None."""
        return self._upstream.settings if self._upstream else None

    async def upstream_end_offsets(self, partitions: list[tuple[str, int]]
                                   ) -> dict[tuple[str, int], int]:
        """Each partition's end offset upstream (``cohort groups --describe``'s LAG); empty
        without an upstream or when it cannot be reached."""
        if self._upstream is None:
            return {}
        try:
            return await self._upstream.view.end_offsets(partitions)
        except Exception as e:
            log.info("upstream end offsets not read: %s", e)
            return {}

    def upstream_status(self) -> dict | None:
        """The upstream as last read: reachable, brokers, topics seen (``cohort status``)."""
        return self._upstream.view.status() if self._upstream else None

    @one_change_at_a_time()
    async def sync_upstream(self, expect: dict[str, int | None] | None = None) -> int:
        """Read the upstream's topics now and take every change (the gateway asks after a
        topic change it relayed); the image version after. ``expect``: topic -> partitions
        (0: any), or None for gone: re-read until the upstream's metadata shows them
        (a broker's metadata trails its controller), for ``UPSTREAM_SETTLE_S`` at most."""
        await self._take_upstream_topics(expect or {})
        return self._version

    async def _follow_upstream(self) -> None:
        while True:
            try:
                await self.sync_upstream()
            except Exception as e:  # the upstream away: the image stays as it was
                log.info("upstream topics not read: %s", e)
            await asyncio.sleep(self._upstream.settings.poll_interval_s)

    async def _take_upstream_topics(self, expect: dict[str, int | None] | None = None) -> None:
        """Under the change lock: the upstream's topics as records of this log (new and
        changed topics, tombstones for the gone), once they show what ``expect`` says or
        ``UPSTREAM_SETTLE_S`` passed (see ``sync_upstream``)."""
        deadline = asyncio.get_running_loop().time() + UPSTREAM_SETTLE_S
        while True:
            changes = await self._upstream.changes(self._topics)
            now = {**self._topics, **changes}
            shown = all((now.get(n) is None) if want is None else (
                now.get(n) is not None and want in (0, now[n].num_partitions))
                for n, want in (expect or {}).items())
            if shown or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)
        records = [_topic_record(t) if t is not None else _encode("topic", name, None)
                   for name, t in changes.items()]
        if records:
            await self._commit(records)

    # --------------------------------------------------------------------- topics

    @one_change_at_a_time()
    async def create_topic(
        self, name: str, num_partitions: int, racks: list[list[str]] | None = None,
        configs: dict[str, str] | None = None, replication_factor: int = -1,
    ) -> str:
        """A new topic; ``configs`` (topic configs, as CreateTopics names them) and
        ``replication_factor`` (-1: the cluster's default) go upstream with the CreateTopics
        in front of one, and are kept with the topic otherwise (``topic_configs``)."""
        configs = dict(configs or {})
        if self._upstream is not None:
            await self._upstream.create_topic(name, num_partitions, configs, replication_factor)
            await self._take_upstream_topics({name: num_partitions})
            return self._known(name).topic_id
        _check_topic_name(name)
        if name in self._topics:
            raise CoordinatorError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        _check_partition_count(num_partitions)
        topic_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        topic = _topic(topic_id, name, num_partitions, racks)
        await self._commit([_topic_record(topic, configs)])
        return topic_id

    @one_change_at_a_time()
    async def add_partitions(
        self, name: str, total: int, racks: list[list[str]] | None = None
    ) -> None:
        """Grow ``name`` to ``total`` partitions, as ``kafka-topics --alter --partitions``."""
        if self._upstream is not None:
            await self._upstream.add_partitions(name, total)
            await self._take_upstream_topics({name: total})
            return
        old = self._known(name)
        _check_partition_count(total)
        if total <= old.num_partitions:  # Kafka's (KRaft) wording of both refusals
            raise CoordinatorError(
                Errors.INVALID_PARTITIONS,
                f"Topic already has {total} partition(s)." if total == old.num_partitions
                else f"The topic {name} currently has {old.num_partitions} partition(s); "
                     f"{total} would not be an increase.",
            )
        if old.partition_racks is None:
            new_racks = None
        else:
            added = racks or [
                sorted(old.partition_racks[p % old.num_partitions])
                for p in range(old.num_partitions, total)
            ]
            new_racks = [sorted(r) for r in old.partition_racks] + list(added)
        await self._commit([_topic_record(_topic(old.topic_id, name, total, new_racks),
                                          self._topic_configs.get(name))])

    @one_change_at_a_time()
    async def delete_topic(self, name: str) -> None:
        if self._upstream is not None:
            await self._upstream.delete_topic(name)
            await self._take_upstream_topics({name: None})
            return
        self._known(name)
        await self._commit([_encode("topic", name, None)])

    def topics(self) -> list[TopicMetadata]:
        return list(self._topics.values())

    def topic_configs(self, name: str) -> dict[str, str]:
        """The configs an embedded topic was created with (none named: {})."""
        return dict(self._topic_configs.get(name, {}))

    # --------------------------------------------------------- Connect connectors

    @one_change_at_a_time()
    async def create_connector(self, group_id: str, name: str, tasks: int) -> None:
        """A new connector of Connect cluster ``group_id`` running ``tasks`` tasks."""
        _check_connect_group(group_id)
        _check_connector_name(name)
        _check_task_count(tasks)
        if name in self._connectors.get(group_id, {}):
            raise CoordinatorError(
                Errors.DUPLICATE_RESOURCE,
                f"Connector {name} already exists in Connect group {group_id}.",
            )
        await self._commit([_encode("connector", group_id, [name, tasks])])

    @one_change_at_a_time()
    async def alter_connector(self, group_id: str, name: str, tasks: int) -> None:
        """Change a connector's task count (Connect's tasks.max after a reconfiguration)."""
        self._known_connector(group_id, name)
        _check_task_count(tasks)
        await self._commit([_encode("connector", group_id, [name, tasks])])

    @one_change_at_a_time()
    async def delete_connector(self, group_id: str, name: str) -> None:
        self._known_connector(group_id, name)
        await self._commit([_encode("connector", group_id, [name, None])])

    def list_connectors(self, group_id: str) -> dict[str, int]:
        _check_connect_group(group_id)
        return dict(sorted(self._connectors.get(group_id, {}).items()))

    def _known_connector(self, group_id: str, name: str) -> None:
        _check_connect_group(group_id)
        if not isinstance(name, str) or name not in self._connectors.get(group_id, {}):
            raise CoordinatorError(
                Errors.RESOURCE_NOT_FOUND,
                f"Connector {name!r} does not exist in Connect group {group_id}.",
            )

    # -------------------------------------------------------------- group configs

    @one_change_at_a_time()
    async def set_group_config(
        self,
        group_id: str,
        consumer_session_timeout_ms: int | None = None,
        consumer_heartbeat_interval_ms: int | None = None,
        connect_scheduled_rebalance_max_delay_ms: int | None = None,
        **typed: int | str | None,
    ) -> None:
        """``typed``: the other GroupConfig fields, each type's own (``share_*``: session
        timeout, heartbeat interval, record lock duration, ...; ``streams_*``: session timeout,
        heartbeat interval, standby replicas, initial rebalance delay)."""
        if not isinstance(group_id, str) or not group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "group id must be a non-empty string")
        unknown = sorted(k for k in typed if k not in _FIELDS)
        if unknown:
            raise CoordinatorError(Errors.INVALID_CONFIG, f"unknown group configs {unknown}")
        try:
            cfg = GroupConfig(
                consumer_session_timeout_ms,
                consumer_heartbeat_interval_ms,
                connect_scheduled_rebalance_max_delay_ms,
                **typed,  # type: ignore[arg-type]
            )
        except ValueError as e:
            raise CoordinatorError(Errors.INVALID_CONFIG, str(e)) from None
        _check_group_config(cfg, self.config)
        payload = None if cfg == GroupConfig() else _config_payload(cfg)
        await self._commit([_encode("config", group_id, payload)])

    def group_config(self, group_id: str) -> GroupConfig:
        return self._configs.get(group_id) or GroupConfig()

    def configured_groups(self) -> list[str]:
        """The groups with a dynamic config (ListConfigResources' GROUP resources)."""
        return sorted(self._configs)

    def group_configs_of(self, group_ids: list[str]) -> dict[str, GroupConfig]:
        """``group_config`` of each, in one call (a DescribeConfigs naming many groups)."""
        return {g: self.group_config(g) for g in group_ids}

    # ------------------------------------------------------------------- internals

    def _known(self, name: str) -> TopicMetadata:
        topic = self._topics.get(name) if isinstance(name, str) else None
        if topic is None:
            raise CoordinatorError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
            )
        return topic

    async def _commit(self, records: list[bytes]) -> None:
        """Durable first, then applied (then pushed, by ``one_change_at_a_time``): a partition
        never sees an unsaved topic. Called under the change lock; writes in a worker thread."""
        records = [*records, _encode("version", "", self._version + 1)]
        await asyncio.to_thread(self._log.append, records)
        for data in records:
            self._replay(data)
        if self._log.bytes_since_snapshot > SNAPSHOT_AFTER_BYTES:
            await asyncio.to_thread(self._log.write_snapshot, self._compacted())

    async def _push(self) -> None:
        """The image to every partition and every gateway (each answers Metadata from it)."""
        image = self.image()
        calls = []
        names = [partition_actor_name(p) for p in range(self.num_partitions)]
        names += [n for n in ray.util.list_named_actors()
                  if n == GATEWAY_NAME or n.startswith(GATEWAY_NAME + "-")]
        for name in names:
            try:
                actor = ray.get_actor(name, namespace=NAMESPACE)
            except ValueError:
                continue  # not started yet: it pulls the image when it loads
            calls.append(actor.update_image.remote(image))
        if calls:
            done, _ = await asyncio.wait(
                [asyncio.ensure_future(_quiet(c)) for c in calls], timeout=PUSH_TIMEOUT_S
            )
            log.debug("pushed image %d to %d/%d partitions", image.version, len(done), len(calls))

    def _compacted(self) -> list[bytes]:
        out = [_topic_record(t, self._topic_configs.get(t.name)) for t in self._topics.values()]
        out += [_encode("config", g, _config_payload(c)) for g, c in self._configs.items()]
        out += [
            _encode("connector", g, [name, tasks])
            for g, of_group in self._connectors.items()
            for name, tasks in of_group.items()
        ]
        out += self._security_records()
        out.append(_encode("version", "", self._version))
        return out

    def _replay(self, data: bytes) -> None:
        kind, name, payload = msgpack.unpackb(data, raw=False)
        if kind == "version":
            self._version = payload
        elif kind == "topic":
            self._topic_configs.pop(name, None)
            if payload is None:
                self._topics.pop(name, None)
            else:
                topic_id, n, racks, *rest = payload  # older logs: no configs
                self._topics[name] = _topic(topic_id, name, n, racks)
                if rest and rest[0]:
                    self._topic_configs[name] = dict(rest[0])
        elif kind == "config":
            if payload is None:
                self._configs.pop(name, None)
            else:
                self._configs[name] = GroupConfig(*payload)  # older logs: fewer fields
        elif kind == "connector":
            connector, tasks = payload
            of_group = self._connectors.setdefault(name, {})
            if tasks is None:
                of_group.pop(connector, None)
                if not of_group:
                    del self._connectors[name]
            else:
                of_group[connector] = tasks
        else:
            self._replay_security(kind, name, payload)


async def _quiet(ref) -> None:
    try:
        await ref
    except Exception as e:  # a partition mid-restart pulls the image itself when it loads
        log.info("push failed: %s", e)


def _encode(kind: str, name: str, payload: object) -> bytes:
    return msgpack.packb([kind, name, payload], use_bin_type=True)


_FIELDS = tuple(f.name for f in dataclasses.fields(GroupConfig))


def _config_payload(cfg: GroupConfig) -> list:
    """Every field in declaration order (a log of older, shorter payloads still loads)."""
    return [getattr(cfg, name) for name in _FIELDS]


def _topic_record(t: TopicMetadata, configs: dict[str, str] | None = None) -> bytes:
    racks = None if t.partition_racks is None else [sorted(r) for r in t.partition_racks]
    payload = [t.topic_id, t.num_partitions, racks]
    if configs:
        payload.append(sorted(configs.items()))
    return _encode("topic", t.name, payload)


def _topic(topic_id: str, name: str, n: int, racks: list[list[str]] | None) -> TopicMetadata:
    try:
        rack_sets = None if racks is None else tuple(frozenset(r) for r in racks)
        return TopicMetadata(topic_id, name, n, rack_sets)
    except (TypeError, ValueError) as e:
        raise CoordinatorError(Errors.INVALID_PARTITIONS, f"bad racks: {e}") from None


def _check_topic_name(name: object) -> None:
    ok = (
        isinstance(name, str)
        and 0 < len(name) <= TOPIC_NAME_MAX_CHARS
        and name not in (".", "..")
        and _TOPIC_NAME.fullmatch(name) is not None
    )
    if not ok:
        raise CoordinatorError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name {name!r} is illegal: it must be 1-{TOPIC_NAME_MAX_CHARS} of "
            "[a-zA-Z0-9._-] and not '.' or '..'.",
        )


def _check_partition_count(n: object) -> None:
    if type(n) is not int or not 0 < n <= MAX_PARTITIONS_PER_TOPIC:
        raise CoordinatorError(
            Errors.INVALID_PARTITIONS,
            f"Number of partitions must be an int in 1..{MAX_PARTITIONS_PER_TOPIC}, got {n!r}.",
        )


def _check_connect_group(group_id: object) -> None:
    if not isinstance(group_id, str) or not group_id:
        raise CoordinatorError(
            Errors.INVALID_GROUP_ID, "A Connect group id must be a non-empty string."
        )


def _check_connector_name(name: object) -> None:
    ok = (
        isinstance(name, str)
        and 0 < len(name) <= CONNECTOR_NAME_MAX_CHARS
        and name.strip() == name
        and name.isprintable()
    )
    if not ok:
        raise CoordinatorError(
            Errors.INVALID_REQUEST,
            f"Connector name {name!r} is illegal: it must be 1-{CONNECTOR_NAME_MAX_CHARS} "
            "printable characters without surrounding whitespace.",
        )


def _check_task_count(tasks: object) -> None:
    if type(tasks) is not int or not 0 < tasks <= MAX_TASKS_PER_CONNECTOR:
        raise CoordinatorError(
            Errors.INVALID_CONFIG,
            f"tasks.max must be an int in 1..{MAX_TASKS_PER_CONNECTOR}, got {tasks!r}.",
        )


def _check_group_config(cfg: GroupConfig, broker: CoordinatorConfig) -> None:
    """Kafka's GroupConfig validation: within the broker's bounds, interval below timeout."""
    session, interval = cfg.consumer_session_timeout_ms, cfg.consumer_heartbeat_interval_ms
    checks = [
        (session, "consumer.session.timeout.ms", broker.group_consumer_min_session_timeout_ms,
         broker.group_consumer_max_session_timeout_ms),
        (interval, "consumer.heartbeat.interval.ms",
         broker.group_consumer_min_heartbeat_interval_ms,
         broker.group_consumer_max_heartbeat_interval_ms),
        (cfg.consumer_assignment_interval_ms, "consumer.assignment.interval.ms",
         broker.group_consumer_min_assignment_interval_ms,
         broker.group_consumer_max_assignment_interval_ms),
        (cfg.connect_scheduled_rebalance_max_delay_ms, "connect.scheduled.rebalance.max.delay.ms",
         0, 2**31 - 1),
        *cfg.type_bounds(broker),
    ]
    for value, key, low, high in checks:
        if value is None:
            continue
        if type(value) is not int or not low <= value <= high:  # Kafka's words
            raise CoordinatorError(
                Errors.INVALID_CONFIG, f"{key} must be in the range {low} to {high} inclusive."
            )
    if cfg.effective_heartbeat_interval_ms(broker) >= cfg.effective_session_timeout_ms(broker):
        raise CoordinatorError(
            Errors.INVALID_CONFIG,
            "consumer.heartbeat.interval.ms must be less than consumer.session.timeout.ms.",
        )
