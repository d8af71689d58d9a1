"""The differential tests' two systems, configured alike, and their summary.

Kafka 4.4 is started here with the session Cohort's settings (``RAY_TEST_CONFIG``: session
timeouts, heartbeat intervals, the classic initial rebalance delay, three ``__consumer_offsets``
partitions), so that a conversation's outcome depends on the rules, not on a default that
differs. Two of Kafka's settings make it deterministic where Cohort is by construction:
KIP-1263's assignment interval is 0 (Kafka computes a target in the heartbeat that needs it, as
Cohort does within the turn), and its minimum follows. The topics every script may use are
created on both (Kafka through its admin API, Cohort through ``cluster.create_topic``), and
each system's ``__consumer_offsets`` partitions are warmed up before the first conversation.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from actors.tools.reference_kafka import ReferenceKafka
from protocol.config import CoordinatorConfig
from tests.conformance import allowlist
from tests.conformance.script import TOPICS
from tests.conformance.systems import (
    System,
    common_versions,
    create_topics_on_kafka,
    warm_up,
)
from tests.conformance.tally import TALLY
from tests.conftest import RAY_TEST_CONFIG, RAY_TEST_PARTITIONS
from tests.gateway.conftest import gateway  # noqa: F401 - the session's gateway, shared

KAFKA_READY_S = 240.0  # a busy two-core machine starts the JVM slowly


def kafka_config(c: CoordinatorConfig, partitions: int) -> dict[str, object]:
    """Kafka's broker settings for a Cohort configured as ``c``."""
    return {
        "group.consumer.session.timeout.ms": c.group_consumer_session_timeout_ms,
        "group.consumer.min.session.timeout.ms": c.group_consumer_min_session_timeout_ms,
        "group.consumer.max.session.timeout.ms": c.group_consumer_max_session_timeout_ms,
        "group.consumer.heartbeat.interval.ms": c.group_consumer_heartbeat_interval_ms,
        "group.consumer.min.heartbeat.interval.ms": c.group_consumer_min_heartbeat_interval_ms,
        "group.consumer.max.heartbeat.interval.ms": c.group_consumer_max_heartbeat_interval_ms,
        "group.min.session.timeout.ms": c.group_min_session_timeout_ms,
        "group.max.session.timeout.ms": c.group_max_session_timeout_ms,
        "group.initial.rebalance.delay.ms": c.group_initial_rebalance_delay_ms,
        "group.share.session.timeout.ms": c.group_share_session_timeout_ms,
        "group.share.min.session.timeout.ms": c.group_share_min_session_timeout_ms,
        "group.share.max.session.timeout.ms": c.group_share_max_session_timeout_ms,
        "group.share.heartbeat.interval.ms": c.group_share_heartbeat_interval_ms,
        "group.share.min.heartbeat.interval.ms": c.group_share_min_heartbeat_interval_ms,
        "group.share.max.heartbeat.interval.ms": c.group_share_max_heartbeat_interval_ms,
        # KIP-1263: the session's interval (0: a target is computed when a heartbeat needs
        # it) and its bounds.
        "group.consumer.assignment.interval.ms": c.group_consumer_assignment_interval_ms,
        "group.consumer.min.assignment.interval.ms": c.group_consumer_min_assignment_interval_ms,
        "group.consumer.max.assignment.interval.ms": c.group_consumer_max_assignment_interval_ms,
        "group.share.assignment.interval.ms": c.group_share_assignment_interval_ms,
        "group.share.min.assignment.interval.ms": c.group_share_min_assignment_interval_ms,
        "group.share.max.assignment.interval.ms": c.group_share_max_assignment_interval_ms,
        "group.streams.assignment.interval.ms": c.group_streams_assignment_interval_ms,
        "group.streams.min.assignment.interval.ms": c.group_streams_min_assignment_interval_ms,
        "group.streams.max.assignment.interval.ms": c.group_streams_max_assignment_interval_ms,
        "group.streams.session.timeout.ms": c.group_streams_session_timeout_ms,
        "group.streams.min.session.timeout.ms": c.group_streams_min_session_timeout_ms,
        "group.streams.max.session.timeout.ms": c.group_streams_max_session_timeout_ms,
        "group.streams.heartbeat.interval.ms": c.group_streams_heartbeat_interval_ms,
        "group.streams.min.heartbeat.interval.ms": c.group_streams_min_heartbeat_interval_ms,
        "group.streams.max.heartbeat.interval.ms": c.group_streams_max_heartbeat_interval_ms,
        "group.streams.initial.rebalance.delay.ms": c.group_streams_initial_rebalance_delay_ms,
        "group.streams.num.standby.replicas": c.group_streams_num_standby_replicas,
        "offsets.topic.num.partitions": partitions,
        "share.coordinator.state.topic.num.partitions": partitions,
    }


@pytest.fixture(scope="session")
def kafka_as_cohort():
    """Apache Kafka 4.4 configured as the session's Cohort (this directory's own broker: the
    suite-wide ``reference_kafka`` keeps Kafka's defaults for the tests that want them, and is
    not asked for here, so the session does not start it too)."""
    kafka = ReferenceKafka(config=kafka_config(RAY_TEST_CONFIG, RAY_TEST_PARTITIONS),
                           ready_timeout_s=KAFKA_READY_S).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@dataclass
class Systems:
    kafka: System
    cohort: System
    pool: ThreadPoolExecutor


@pytest.fixture(scope="session")
def systems(kafka_as_cohort, cluster, gateway):  # noqa: F811 - the imported fixture
    kafka = System("kafka", kafka_as_cohort.bootstrap)
    cohort = System("cohort", gateway)
    create_topics_on_kafka(kafka, TOPICS)
    known = {t.name for t in cluster.topics()}
    for name, partitions in TOPICS.items():
        if name not in known:
            cluster.create_topic(name, partitions)
    cohort.read_topics(TOPICS)
    for system in (kafka, cohort):
        warm_up(system, RAY_TEST_PARTITIONS)
    kafka.versions = cohort.versions = common_versions(kafka, cohort)
    with ThreadPoolExecutor(2, thread_name_prefix="conformance") as pool:
        yield Systems(kafka, cohort, pool)


# ------------------------------------------------------------------------------ summary


def pytest_terminal_summary(terminalreporter) -> None:
    if not TALLY.cases:
        return
    write = terminalreporter.write_line
    terminalreporter.section("differential conformance: Apache Kafka 4.4 vs Cohort")
    write(f"{TALLY.cases} conversations played on both; {TALLY.differences} differences, "
          f"{TALLY.differences - len(TALLY.unexplained)} allowed by docs/decisions.md, "
          f"{len(TALLY.unexplained)} unexplained")
    for row, n in sorted(TALLY.allowed.items(), key=lambda kv: -kv[1]):
        write(f"  {n:4d} x {row}")
    idle = [str(r) for r in allowlist.load() if str(r) not in TALLY.allowed]
    if idle:
        write(f"  allow-list rows that allowed nothing this session: {idle}")
    for line in TALLY.unexplained:
        write(f"  UNEXPLAINED {line}")
