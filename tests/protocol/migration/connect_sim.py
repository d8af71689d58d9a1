"""A shard, a simulated clock, and both kinds of Connect worker client halves at once:
classic ones (JoinGroup/SyncGroup, protocol type "connect") and new-protocol ones
(ConnectGroupHeartbeat), for rolling a group from one protocol to the other.

Requests are answered as the shard answers them, held ones (a classic join phase) when a later
event completes them. Every record the shard writes is kept, so a test can replay them into a
fresh shard. After every reply, no connector or task may run on two workers.
"""

from __future__ import annotations

from collections import Counter

from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.client.classic_connect import ClassicConnectWorkerClient
from protocol.client.connect_worker import ConnectWorkerClient
from protocol.config import CoordinatorConfig
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard

GROUP = "connect-mig"
SESSION_MS = 3_000
HEARTBEAT_MS = 200
EPSILON_S = 1e-9


def config(**overrides) -> CoordinatorConfig:
    fields = dict(
        group_min_session_timeout_ms=1_000,
        group_initial_rebalance_delay_ms=100,
        group_connect_session_timeout_ms=SESSION_MS,
        group_connect_heartbeat_interval_ms=HEARTBEAT_MS,
        group_connect_scheduled_rebalance_max_delay_ms=0,
    )
    fields.update(overrides)
    return CoordinatorConfig(**fields)


Client = ClassicConnectWorkerClient | ConnectWorkerClient


class MigrationSim:
    def __init__(self, connectors: dict[str, int], cfg: CoordinatorConfig | None = None) -> None:
        self.connectors = dict(connectors)
        self.offset = 1
        self.shard = GroupCoordinatorShard(cfg or config(), self._image())
        self.now_ms = 0
        self.clients: dict[str, Client] = {}
        self.sent: dict[str, object] = {}
        self.records: list[Record] = []

    @property
    def now(self) -> float:
        return self.now_ms / 1000

    def _image(self) -> MetadataImage:
        return MetadataImage(
            [], [ConnectorMetadata(GROUP, c, n) for c, n in self.connectors.items()]
        )

    def read_config(self) -> tuple[int, dict[str, int]]:
        return self.offset, dict(self.connectors)

    def set_connectors(self, connectors: dict[str, int]) -> None:
        self.connectors, self.offset = dict(connectors), self.offset + 1
        self.records += self.shard.update_metadata(self._image()).records
        for c in self.clients.values():
            if isinstance(c, ClassicConnectWorkerClient):
                c.config_changed()

    # ------------------------------------------------------------------ workers

    def add_classic(self, name: str, mode: str = "sessioned") -> ClassicConnectWorkerClient:
        client = ClassicConnectWorkerClient(
            GROUP, name, config=self.read_config, connect_protocol=mode,
            session_timeout_ms=SESSION_MS, rebalance_timeout_ms=5_000,
            heartbeat_interval_ms=HEARTBEAT_MS, assignor=IncrementalCooperativeAssignor(0),
        )
        self.clients[name] = client
        return client

    def add_new(self, name: str) -> ConnectWorkerClient:
        client = ConnectWorkerClient(
            GROUP, name, assignors=[IncrementalCooperativeAssignor(0)],
            session_timeout_ms=SESSION_MS, rebalance_timeout_ms=5_000,
        )
        self.clients[name] = client
        return client

    def stop(self, name: str, limit_ms: int = 2_000) -> None:
        """The worker leaves (stopping its work first) and is gone once the leave is sent."""
        self.clients[name].leave()
        waited = 0
        while self.clients[name].state != "stopped":
            assert waited <= limit_ms, f"{name} did not leave"
            self.run(50)
            waited += 50
        del self.clients[name]

    # ------------------------------------------------------------------ the loop

    def _apply(self, result) -> None:
        self.records += result.records
        for request, reply in result.replies:
            name = next((n for n, r in self.sent.items() if r is request), None)
            if name is None:
                continue
            del self.sent[name]
            if name in self.clients:
                self.clients[name].on_response(self.now, reply)
            assert_exclusive(self)

    def step(self) -> None:
        for name, c in list(self.clients.items()):
            for _ in range(20):
                if name in self.sent or name not in self.clients:
                    break
                req = c.poll(self.now)
                if req is None:
                    break
                self.sent[name] = req
                self._apply(self.shard.handle(req))
        self._apply(self.shard.tick(self.now_ms))

    def run(self, ms: int, step_ms: int = 50) -> None:
        end = self.now_ms + ms
        while True:
            self.step()
            if self.now_ms >= end:
                return
            self.now_ms += min(step_ms, end - self.now_ms)

    def all_units(self) -> list[tuple[str, int]]:
        return sorted([(c, -1) for c in self.connectors]
                      + [(c, t) for c, n in self.connectors.items() for t in range(n)])

    def converged(self) -> bool:
        """Settled for the workers and for the coordinator alike: a rebalance the coordinator
        began (a leave just handled) is news no worker has heard yet."""
        live = list(self.clients.values())
        used = sorted(u for c in live for u in units(c))
        group = self.shard.groups.get(GROUP)
        return (
            used == self.all_units()
            and (group is None or group.state == "stable")
            and all(c.state == "stable" for c in live)
            and not any(getattr(c, "pending", None) for c in live)
            and not any(getattr(c, "_rejoin_at", None) is not None for c in live)
        )

    def settle(self, limit_ms: int = 20_000) -> None:
        waited = 0
        while not self.converged():
            assert waited <= limit_ms, {n: (c.state, units(c)) for n, c in self.clients.items()}
            self.run(HEARTBEAT_MS)
            waited += HEARTBEAT_MS

    def describe(self) -> m.DescribeGroupsResponseGroup:
        return self.shard.handle(m.DescribeGroupsRequest([GROUP])).response.groups[0]


def units(c: Client) -> list[tuple[str, int]]:
    return [(n, -1) for n in c.owned.connectors] + list(c.owned.tasks)


def assert_exclusive(sim: MigrationSim) -> None:
    """No connector or task runs on two workers now (a worker past its ownership deadline
    runs nothing: it gives its work up the moment the coordinator could have removed it)."""
    seen = Counter()
    for c in sim.clients.values():
        deadline = c.ownership_deadline
        if deadline is not None and sim.now >= deadline - EPSILON_S:
            continue
        seen.update(units(c))
    doubled = [u for u, n in seen.items() if n > 1]
    assert not doubled, f"{doubled} run on two workers at {sim.now}"
