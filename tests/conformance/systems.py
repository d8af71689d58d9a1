"""The two systems a conversation plays on: Apache Kafka 4.4 and Cohort, reached alike.

A ``System`` is a bootstrap address and what the runner needs to know of it: each topic's id
(read from Metadata: the ids are each broker's own), the version of each API that both systems
serve (the highest common one, so that both parse the very same request), and the coordinator
of each group (FindCoordinator, asked once, retried while the broker is still making its
``__consumer_offsets``). Nothing here is particular to either system.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from actors.tools.reference_kafka import api_versions
from protocol.placement import partition_for
from tests.conformance.script import API_KEYS
from tests.conformance.wire import Connection

DEADLINE_S = 30.0
POLL_S = 0.05
GROUP_KEY, SHARE_KEY = 0, 2  # FindCoordinator's key types (share: KIP-932's share coordinator)


class NotReached(AssertionError):
    """A system did not reach a state the runner waits for."""


@dataclass
class System:
    name: str
    bootstrap: str
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    _coordinators: dict[str, str] = field(default_factory=dict)

    @property
    def topic_names(self) -> dict[uuid.UUID, str]:
        return {i: n for n, i in self.topic_ids.items()}

    def connect(self, address: str | None = None) -> Connection:
        return Connection(address or self.bootstrap)

    def coordinator(self, group: str) -> str:
        """The address of ``group``'s coordinator."""
        if group not in self._coordinators:
            conn = self.connect()
            try:
                deadline = time.monotonic() + DEADLINE_S
                while True:
                    reply = conn.call(10, 4, {"key_type": GROUP_KEY, "coordinator_keys": [group]})
                    found = reply["coordinators"][0]
                    if found["error_code"] == 0:
                        break
                    if time.monotonic() > deadline:
                        raise NotReached(f"{self.name}: no coordinator for {group}: {found}")
                    time.sleep(POLL_S)
            finally:
                conn.close()
            self._coordinators[group] = f"{found['host']}:{found['port']}"
        return self._coordinators[group]

    def read_topics(self, wanted: dict[str, int]) -> None:
        """Wait until Metadata shows every topic of ``wanted`` with its partition count, and
        keep their ids (a broker's metadata trails its controller by a moment)."""
        conn = self.connect()
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:
                reply = conn.call(3, 12, {"topics": None, "allow_auto_topic_creation": False})
                seen = {t["name"]: t for t in reply["topics"] if t["error_code"] == 0}
                if all(name in seen and len(seen[name]["partitions"]) == n
                       for name, n in wanted.items()):
                    break
                if time.monotonic() > deadline:
                    raise NotReached(f"{self.name}: topics {wanted} not in metadata")
                time.sleep(POLL_S)
        finally:
            conn.close()
        self.topic_ids.update({name: seen[name]["topic_id"] for name in wanted})


def common_versions(*systems: System) -> dict[str, int]:
    """For each API a script may send, the highest version every system serves."""
    tables = [api_versions(s.bootstrap) for s in systems]
    out = {}
    for name, key in API_KEYS.items():
        ranges = [t.get(key) for t in tables]
        if all(ranges):
            low, high = max(r[0] for r in ranges), min(r[1] for r in ranges)
            if low <= high:
                out[name] = high
    return out


def create_topics_on_kafka(system: System, topics: dict[str, int]) -> None:
    """CreateTopics on the reference broker (its admin API), then wait for its metadata."""
    conn = system.connect()
    try:
        reply = conn.call(19, 7, {"topics": [
            {"name": name, "num_partitions": n, "replication_factor": 1, "assignments": [],
             "configs": []} for name, n in topics.items()],
            "timeout": 30_000, "validate_only": False})
    finally:
        conn.close()
    failed = [t for t in reply["topics"] if t["error_code"] not in (0, 36)]  # 36: exists
    if failed:
        raise NotReached(f"kafka: CreateTopics failed: {failed}")
    system.read_topics(topics)


NOT_READY = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


def warm_up(system: System, num_partitions: int) -> None:
    """Wait until every ``__consumer_offsets`` partition's coordinator answers (Kafka loads
    its partitions after it creates the topic on first use): a group of each partition is
    described until the answer is not "not ready"."""
    for p in range(num_partitions):
        group = next(g for g in (f"warm-up-{n}" for n in range(10_000))
                     if partition_for(g, num_partitions) == p)
        deadline = time.monotonic() + DEADLINE_S
        while True:
            conn = system.connect(system.coordinator(group))
            try:
                reply = conn.call(15, 5, {"groups": [group],
                                          "include_authorized_operations": False})
            finally:
                conn.close()
            if reply["groups"][0]["error_code"] not in NOT_READY:
                break
            if time.monotonic() > deadline:
                raise NotReached(f"{system.name}: partition {p} never loaded: {reply}")
            system._coordinators.pop(group, None)
            time.sleep(POLL_S)
