"""Suite-wide settings.

Hypothesis: no per-example deadline and no "too slow" health check, because CI runs on a
shared 2-core machine where timing is noise; the properties, not the speed, are under test
(speed lives in bench/).
"""

from hypothesis import HealthCheck, settings

settings.register_profile("cohort", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cohort")

# ---------------------------------------------------------------------------- Ray

import os  # noqa: E402

import pytest  # noqa: E402

from protocol.config import CoordinatorConfig  # noqa: E402
from tests.local_ray import start_local_ray  # noqa: E402

# Short timeouts so failover and fencing happen within a test's patience.
RAY_TEST_CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=4_000,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_max_session_timeout_ms=60_000,
    group_consumer_heartbeat_interval_ms=300,
    group_consumer_min_heartbeat_interval_ms=100,
    group_consumer_max_heartbeat_interval_ms=5_000,
    # Cohort's short interval for a member with a step waiting is its own (decisions.md,
    # "Heartbeat"), off under Kafka's defaults; off here too, so that tests/conformance compares
    # every heartbeat reply with Apache Kafka's configured alike.
    group_consumer_reconciliation_heartbeat_interval_ms=300,
    # KIP-1263: no assignment interval (Kafka's default is 1 s), so a join is assigned in the
    # turn that bumps; the reference broker is configured alike (tests/conformance).
    group_consumer_assignment_interval_ms=0,
    group_min_session_timeout_ms=1_000,
    group_initial_rebalance_delay_ms=300,
    # Streams groups' group configs as the streams tests set them (Kafka's shipped minimums,
    # 45 s and 5 s, would refuse them; the reference broker is widened alike).
    group_streams_min_session_timeout_ms=1_000,
    group_streams_min_heartbeat_interval_ms=100,
    group_connect_session_timeout_ms=4_000,
    group_connect_heartbeat_interval_ms=300,
    group_share_session_timeout_ms=4_000,
    group_share_min_session_timeout_ms=1_000,
    group_share_heartbeat_interval_ms=300,
    group_share_min_heartbeat_interval_ms=100,
    group_share_assignment_interval_ms=0,  # KIP-1263, as the consumer groups'
    group_streams_assignment_interval_ms=0,  # and the streams groups'
)
RAY_TEST_PARTITIONS = 3


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """One local Ray and one Cohort for the whole session (starting Ray costs seconds)."""
    import ray

    from actors.cluster import Cluster

    # address="local": a Ray started elsewhere on this machine (`ray start`, a bench) is
    # never joined; the session owns its own.
    start_local_ray()
    c = Cluster.start(
        num_partitions=RAY_TEST_PARTITIONS,
        storage_path=str(tmp_path_factory.mktemp("cohort-data")),
        config=RAY_TEST_CONFIG,
    )
    _SESSION["cluster"] = c
    yield c
    _SESSION.clear()
    c.shutdown()
    ray.shutdown()


_SESSION: dict[str, object] = {}
# What a test needs that makes it a Ray or JVM test whatever its module's markers say:
# scripts/test.sh runs those in one lane and the pure tests beside them in another.
RAY_FIXTURES = frozenset({"cluster"})
JVM_FIXTURES = frozenset({"reference_kafka", "java"})


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        needs = set(getattr(item, "fixturenames", ()))
        if needs & RAY_FIXTURES and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.ray)
        if needs & JVM_FIXTURES and item.get_closest_marker("jvm") is None:
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(autouse=True, scope="module")
def _client_actors_end_with_their_module():
    """The client actors a module spawned through the session's Cohort are killed when it
    ends. Left running they heartbeat for the rest of the session: 100 of them (52 consumers,
    22 Connect workers, ...) kept a 2-core machine's load near 30 for the last half of it."""
    yield
    c = _SESSION.get("cluster")
    if c is not None:
        c.close()


# ---------------------------------------------------------------------- reference broker

# Apache Kafka 4.4.0 itself (DESIGN.md, "The reference broker"): the ``reference_kafka``
# session fixture, started by the first test that asks for it.
pytest_plugins = ["tests.reference_kafka_fixture"]


# ---------------------------------------------------------------------- object store


@pytest.fixture(scope="session")
def seaweedfs():
    """One SeaweedFS (a real S3 endpoint) for the session, started by the first test that asks
    for it; its ``env`` holds the AWS_* variables, ``url()`` a fresh s3:// prefix."""
    from tests.object_store import seaweedfs as start

    with start() as server:
        yield server


# ---------------------------------------------------------------------- a frozen test

import faulthandler  # noqa: E402

# A test that freezes the whole process (a C call that holds the GIL and never returns, say a
# Kafka client's) leaves CI silent until its cap. faulthandler's watchdog is a C thread, so it
# fires all the same: it prints every thread's stack and ends the run, a failure that says where.
FROZEN_TEST_S = 600.0
_stderr_fd: list[int] = []


def pytest_sessionstart(session) -> None:
    # Before any test runs, fd 2 is still the terminal or CI's log, not pytest's capture file.
    _stderr_fd.append(os.dup(2))


@pytest.fixture(autouse=True)
def _frozen_test_watchdog():
    if _stderr_fd:
        faulthandler.dump_traceback_later(FROZEN_TEST_S, exit=True, file=_stderr_fd[0])
    yield
    faulthandler.cancel_dump_traceback_later()
