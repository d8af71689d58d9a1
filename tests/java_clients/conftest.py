"""Kafka's own Java clients and tools as black boxes against Cohort's gateway (issue 29).

``java`` is one JVM for the session (``actors/tools/java_clients.py``): every Java consumer
group, share group and command-line tool of these tests runs in it, a JVM start (about a
second of this machine) paid once. ``gateway`` is the session Cohort's Kafka wire gateway, as
in tests/gateway.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest

from actors.tools.java_clients import JavaClients

_names = itertools.count()


def unique(prefix: str) -> str:
    """A name no other test of the session uses."""
    return f"{prefix}-{next(_names)}-{int(time.time() * 1000) % 10**7}"


@pytest.fixture(scope="session")
def gateway(cluster) -> Iterator[str]:
    """The session's gateway: ``bootstrap.servers`` for real clients."""
    bootstrap = cluster.start_gateway(port=0)
    yield bootstrap
    cluster.stop_gateway()


@pytest.fixture(scope="session")
def java() -> Iterator[JavaClients]:
    """The session's JVM running the Java driver."""
    with JavaClients() as clients:
        yield clients
