"""``ConnectWorker``: a Ray actor running one Kafka Connect worker against Cohort.

The worker's protocol logic is a pure client half: ``ConnectWorkerClient`` for the new
``connect`` group type (seed 004; ``protocol="connect"``) or ``ClassicConnectWorkerClient``
for classic Connect groups (JoinGroup/SyncGroup with protocol type "connect";
``protocol="classic"``), which a rolling migration starts from and returns to. This actor is
its I/O: it sends what the client's ``poll`` returns to the coordinator partition the group
hashes to, one request at a time, and feeds the reply back. A dead or restarting coordinator
shows up as a failed call: the client backs off and keeps its work only as long as the
session rules allow.

The connectors and tasks it is given run as synthetic work (``protocol/client/task_work.py``):
each records the time ranges it ran, so a connector or task running on two workers at once
would show. With ``timeline_path`` both the ownership timeline and the work ranges are
appended to a file as they happen, so a chaos run can read the history of a worker it killed.

A classic worker reads the group's connectors from the controller (Cohort's config topic):
before each JoinGroup and every ``CONFIG_REFRESH_S``; the config offset it reports is the
controller's image version, and a change of the group's connectors makes the leader rejoin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from typing import Any

import ray

from actors.clients.owner_watch import watch_owner
from actors.clients.timeline import TimelineSink
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, partition_actor_name
from actors.runtime.packed import pack, unpack
from assignors.connect import DEFAULT_MAX_DELAY_MS, IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.client.classic_connect import ClassicConnectWorkerClient
from protocol.client.connect_worker import ConnectWorkerClient
from protocol.client.task_work import TaskWork
from protocol.placement import partition_for

log = logging.getLogger(__name__)

MAX_SLEEP_S = 0.5  # the loop wakes at least this often (stop(), due requests, work reports)
CALL_TIMEOUT_S = 30.0
JOIN_CALL_MARGIN_S = 10.0  # a held JoinGroup may take the rebalance timeout, and then some
LEAVE_TIMEOUT_S = 10.0
CONFIG_REFRESH_S = 1.0
PROTOCOLS = ("connect", "classic")


def new_worker_id() -> str:
    return f"worker-{uuid.uuid4().hex[:12]}"


@ray.remote(num_cpus=0, max_restarts=0)
class ConnectWorker:
    """A Kafka Connect worker process: one Connect client half, its I/O and its tasks.

    It exists to run the pure Connect client halves against the real coordinator on Ray,
    cheaply (``num_cpus=0``), and to be killed in chaos runs (``max_restarts=0``: a killed
    worker stays dead, like a crashed process; its work moves once the coordinator fences
    it). Guarantees: one request in flight to the coordinator; a unit's work stops before the
    heartbeat that acknowledges its revocation is sent; work stops at the client's ownership
    deadline even while a call to the coordinator is out; with ``timeline_path`` every event
    reaches the file before the requests it led to are sent.
    """

    def __init__(
        self,
        group_id: str,
        num_partitions: int,
        protocol: str = "connect",
        worker_id: str | None = None,
        instance_id: str | None = None,
        assignor_versions: tuple[int, int] = (1, 2),
        scheduled_rebalance_max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        timeline_path: str | None = None,
        records_per_s: float = 50.0,
        report_interval_s: float = 1.0,
        owner: Any = None,
        **options: Any,
    ) -> None:
        """``options`` go to the client half: ``session_timeout_ms``,
        ``rebalance_timeout_ms``; for ``protocol="classic"`` also ``heartbeat_interval_ms``
        and ``connect_protocol`` (``eager`` | ``compatible`` | ``sessioned``). ``owner``: the
        spawner's ``OwnerAnchor``; when it dies the worker leaves (``owner_watch.py``)."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}: 'connect' or 'classic'")
        self.group_id, self.protocol = group_id, protocol
        self.worker_id = worker_id or new_worker_id()
        lo, hi = assignor_versions
        assignor = IncrementalCooperativeAssignor(
            scheduled_rebalance_max_delay_ms, minimum_version=lo, maximum_version=hi
        )
        self.work = TaskWork(self.worker_id, records_per_s, report_interval_s)
        callbacks = {
            "on_assigned": self._started,
            "on_revoked": self._stopped,
            "on_lost": self._stopped,
            "wall_offset_s": time.time() - time.monotonic(),
        }
        self._connectors: dict[str, int] = {}
        self._config_offset = -1
        self.client: ConnectWorkerClient | ClassicConnectWorkerClient
        if protocol == "connect":
            self.client = ConnectWorkerClient(
                group_id, self.worker_id, instance_id=instance_id, assignors=[assignor],
                **callbacks, **options,
            )
        else:
            self.client = ClassicConnectWorkerClient(
                group_id, self.worker_id, config=self._config, assignor=assignor,
                **callbacks, **options,
            )
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE
        )
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._sink = TimelineSink(timeline_path)
        self._config_read_at = -float("inf")
        self._stopping = False
        self._stats = {"calls": 0, "failed_calls": 0}
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._owner_watch = watch_owner(owner, self._owner_gone)

    # ------------------------------------------------------------------ the contract

    async def assignment(self) -> dict[str, list]:
        """What runs here now: ``{"connectors": [...], "tasks": [(connector, task), ...]}``."""
        return self.client.assignment

    async def timeline(self) -> list[dict]:
        """Ownership events: "assigned" | "revoked" | "lost" with "connectors" and "tasks"."""
        return [dict(e, group_id=self.group_id) for e in self.client.timeline]

    async def work_log(self) -> list[dict]:
        """The ``ran`` ranges of every unit this worker ran, up to now."""
        self.work.advance(time.monotonic(), everything=True)
        return [dict(e, group_id=self.group_id) for e in self.work.events]

    async def records(self) -> dict[str, int]:
        """Records each unit processed here: ``{"connector" | "connector-task": n}``."""
        return {c if t < 0 else f"{c}-{t}": n for (c, t), n in sorted(self.work.records.items())}

    async def info(self) -> dict[str, Any]:
        c = self.client
        epoch = c.member_epoch if isinstance(c, ConnectWorkerClient) else c.generation
        return {
            "worker_id": self.worker_id,
            "member_id": c.member_id,
            "protocol": self.protocol,
            "state": c.state,
            "epoch": epoch,
            "error": c.error,
            "assignment": c.assignment,
            "pid": os.getpid(),
            "rebalances": getattr(c, "rebalances", None),
            **self._stats,
        }

    async def stop(self, leave: bool = True) -> None:
        """Leave the group (or, with ``leave=False``, just stop heartbeating) and halt."""
        if leave:
            self.client.leave()
            deadline = time.monotonic() + LEAVE_TIMEOUT_S
            while time.monotonic() < deadline and self.client.state not in ("stopped", "failed"):
                await asyncio.sleep(0.05)
        self._stopping = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.work.stop_all(time.monotonic())
        self._flush()

    async def _owner_gone(self) -> None:
        """The driver that spawned this actor exited (``owner_watch``): leave, unless
        already stopped."""
        if not self._stopping:
            await self.stop(leave=True)

    # ------------------------------------------------------------------ the work

    def _started(self, connectors: list[str], tasks: list[tuple[str, int]]) -> None:
        self.work.start(TaskWork.units(connectors, tasks), time.monotonic())

    def _stopped(self, connectors: list[str], tasks: list[tuple[str, int]]) -> None:
        self.work.stop(TaskWork.units(connectors, tasks), time.monotonic())

    def _config(self) -> tuple[int, dict[str, int]]:
        return self._config_offset, dict(self._connectors)

    async def _refresh_config(self) -> None:
        """Classic workers: the group's connectors and the config offset (image version)."""
        try:
            image = await self._controller.image.remote()
        except ray.exceptions.RayError as e:
            log.debug("config not refreshed: %s", e)
            return
        self._config_read_at = time.monotonic()
        connectors = image.metadata.connectors_of(self.group_id)
        changed = connectors != self._connectors and self._config_offset >= 0
        self._connectors, self._config_offset = connectors, image.version
        if changed and isinstance(self.client, ClassicConnectWorkerClient):
            self.client.config_changed()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        classic = isinstance(self.client, ClassicConnectWorkerClient)
        if classic:
            await self._refresh_config()
        while not self._stopping:
            now_s = time.monotonic()
            if classic and (
                now_s - self._config_read_at >= CONFIG_REFRESH_S or self.client.state == "unjoined"
            ):
                await self._refresh_config()
            request = self.client.poll(time.monotonic())
            self.work.advance(time.monotonic())
            self._flush()  # stopped work is on disk before its acknowledgement leaves
            if request is not None:
                await self._send(request)
                continue
            due = self.client.next_due()
            wait = MAX_SLEEP_S if due is None else min(MAX_SLEEP_S, due - time.monotonic())
            await asyncio.sleep(max(wait, 0.001))

    async def _send(self, request: object) -> None:
        self._stats["calls"] += 1
        timeout_s = CALL_TIMEOUT_S
        if isinstance(request, m.JoinGroupRequest):
            timeout_s = self.client.rebalance_timeout_ms / 1000 + JOIN_CALL_MARGIN_S
        # Pickled by us, not by Ray: ~150 µs less a call (actors/runtime/packed.py).
        call = asyncio.ensure_future(self._coordinator.handle_packed.remote(pack(request)))
        give_up = time.monotonic() + timeout_s
        try:
            while not call.done():
                now_s = time.monotonic()
                if now_s >= give_up:
                    raise asyncio.TimeoutError
                # A reply may come after the moment the coordinator could have removed this
                # worker (a slow or restarting coordinator): wake at that deadline and poll,
                # which (in flight) only checks it, so the work stops then, not at the reply.
                wait = min(MAX_SLEEP_S, give_up - now_s)
                if (deadline := self.client.ownership_deadline) is not None:
                    wait = min(wait, deadline - now_s)
                await asyncio.wait({call}, timeout=max(wait, 0.001))
                if not call.done():
                    self.client.poll(time.monotonic())
                    self.work.advance(time.monotonic())
                    self._flush()
            reply = unpack(call.result())
        except (asyncio.TimeoutError, ray.exceptions.RayError) as e:
            call.cancel()
            self._stats["failed_calls"] += 1
            log.debug("%s failed: %s", type(request).__name__, e)
            self.client.on_failure(time.monotonic())
            return
        self.client.on_response(time.monotonic(), reply)

    def _flush(self) -> None:
        sink = self._sink
        if sink.path is None:
            return
        c = self.client
        sink.collect("timeline", c.events_recorded, lambda: c.timeline, group_id=self.group_id)
        sink.collect("work", self.work.recorded, lambda: self.work.events, group_id=self.group_id)
        sink.write()
