"""The gateway tests' fixtures: one gateway on the session's Cohort, and real Kafka clients.

Real clients are kept small and quick (a few members, short session and heartbeat settings:
the session cluster's ``RAY_TEST_CONFIG``), and every wait polls a condition with a deadline.
"""

from __future__ import annotations

import itertools
import time

import pytest

from actors.clients.kafka_consumer import KafkaMember

_names = itertools.count()

# librdkafka's classic settings, short enough for a test's patience.
CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{int(time.time() * 1000) % 10**7}"


@pytest.fixture(scope="session")
def gateway(cluster):
    """The session's gateway: ``bootstrap.servers`` for real clients."""
    bootstrap = cluster.start_gateway(port=0)
    yield bootstrap
    cluster.stop_gateway()


@pytest.fixture
def members():
    """Start ``KafkaMember``s through ``members.add(...)``; all stopped after the test."""
    started: list[KafkaMember] = []

    class Members:
        def add(self, *args, **kwargs) -> KafkaMember:
            m = KafkaMember(*args, **kwargs)
            started.append(m)
            return m.start()

    yield Members()
    for m in started:
        m.stop(leave=True)


def wait_for(predicate, timeout_s: float = 60.0, every_s: float = 0.1):
    """Poll ``predicate`` until it returns something truthy (returned), or fail the test."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(every_s)


def whole(group: list[KafkaMember], partitions: list[tuple[str, int]]) -> bool:
    """Every one of ``partitions`` owned by exactly one member, and each member owns some."""
    owned = [tp for m in group for tp in m.assignment()]
    return sorted(owned) == sorted(partitions) and all(m.assignment() for m in group)
