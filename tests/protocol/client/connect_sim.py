"""A coordinator shard, a simulated clock and ConnectWorkerClients answered at once.

The clock counts whole milliseconds (the shard's unit); clients get it as seconds. Before the
shard handles a request it is ticked to the current time, as the runtime does.
"""

from __future__ import annotations

import math

from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.client.connect_worker import ConnectWorkerClient
from protocol.config import CoordinatorConfig
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.shard import GroupCoordinatorShard

GROUP = "connect-a"
SESSION_MS = 3_000
HEARTBEAT_MS = 200
CONFIG = CoordinatorConfig(
    group_connect_session_timeout_ms=SESSION_MS,
    group_connect_heartbeat_interval_ms=HEARTBEAT_MS,
)
MAX_EXCHANGES_PER_INSTANT = 12  # heartbeat, ack, prepare, install, ack: a handful at most
EPSILON_S = 1e-9


class ConnectSim:
    """One shard, the group's connectors, and worker client halves."""

    def __init__(self, connectors: dict[str, int], max_delay_ms: int = 0) -> None:
        self.connectors = dict(connectors)
        self.shard = GroupCoordinatorShard(CONFIG, self._image())
        self.now_ms = 0
        self.max_delay_ms = max_delay_ms
        self.clients: dict[str, ConnectWorkerClient] = {}

    @property
    def now(self) -> float:
        return self.now_ms / 1000

    def _image(self) -> MetadataImage:
        return MetadataImage(
            [], [ConnectorMetadata(GROUP, c, n) for c, n in self.connectors.items()]
        )

    def set_connectors(self, connectors: dict[str, int]) -> None:
        self.connectors = dict(connectors)
        self.shard.tick(self.now_ms)
        self.shard.update_metadata(self._image())

    def add(self, worker_id: str, versions: tuple[int, int] = (1, 2), **kw) -> ConnectWorkerClient:
        assignor = IncrementalCooperativeAssignor(
            self.max_delay_ms, minimum_version=versions[0], maximum_version=versions[1]
        )
        kw.setdefault("session_timeout_ms", SESSION_MS)
        client = ConnectWorkerClient(GROUP, worker_id, assignors=[assignor], **kw)
        self.clients[worker_id] = client
        return client

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self.shard.tick(self.now_ms)

    def advance_to(self, t: float) -> None:
        self.advance(max(0, math.ceil(t * 1000) - self.now_ms))

    def handle(self, req: object) -> object:
        self.shard.tick(self.now_ms)
        return self.shard.handle(req).response

    def exchange(self, client: ConnectWorkerClient) -> list[object]:
        """Everything the client has to send now, each answered at once."""
        sent = []
        for _ in range(MAX_EXCHANGES_PER_INSTANT):
            req = client.poll(self.now)
            if req is None:
                return sent
            sent.append(req)
            client.on_response(self.now, self.handle(req))
        raise AssertionError(f"{client.member_id} kept sending at {self.now}: {sent[-3:]}")

    def run(self, ms: int, only: list[str] | None = None, step_ms: int = 50) -> None:
        """Let time pass; the chosen clients (all by default) send what is due."""
        end = self.now_ms + ms
        while True:
            for wid in only if only is not None else list(self.clients):
                self.exchange(self.clients[wid])
                assert_exclusive(self.clients.values(), self.now)
            if self.now_ms >= end:
                return
            self.advance(min(step_ms, end - self.now_ms))

    def describe(self) -> m.ConnectDescribedGroup:
        return self.handle(m.ConnectGroupDescribeRequest([GROUP])).groups[0]

    def all_units(self) -> set[tuple[str, int]]:
        return {(c, -1) for c in self.connectors} | {
            (c, t) for c, n in self.connectors.items() for t in range(n)
        }

    def converged(self) -> bool:
        """Every configured unit runs on exactly one live, stable worker."""
        live = [c for c in self.clients.values() if c.state not in ("stopped", "failed")]
        seen: list[tuple[str, int]] = []
        for c in live:
            if c.state != "stable" or c.pending:
                return False
            seen += units(c)
        return sorted(seen) == sorted(self.all_units())


def units(client: ConnectWorkerClient) -> list[tuple[str, int]]:
    owned = client.owned
    return [(c, -1) for c in owned.connectors] + list(owned.tasks)


def lapsed(client: ConnectWorkerClient, now: float) -> bool:
    deadline = client.ownership_deadline
    return deadline is not None and now >= deadline - EPSILON_S


def assert_exclusive(clients, now: float) -> None:
    """No connector or task runs on two workers now (a lapsed worker runs nothing)."""
    seen: dict[tuple[str, int], str] = {}
    for c in clients:
        if lapsed(c, now):
            continue
        for unit in units(c):
            assert unit not in seen, f"{unit} runs on {seen[unit]} and {c.member_id} at {now}"
            seen[unit] = c.member_id
