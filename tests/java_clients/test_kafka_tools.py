"""Kafka's command-line tools, run from the kafka-tools jar (in the session's JVM), print the
same on Cohort's gateway as on Apache Kafka 4.4 for the same scenario
(``tests/java_clients/tool_scenario.py``: the scenario, and what is normalised and why).

Both systems play it at once, each with its own groups and Java clients; the tools run one at a
time in the shared JVM.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.java_clients.conftest import unique
from tests.java_clients.tool_scenario import (
    RECORDS,
    Names,
    System,
    ToolRun,
    normalise,
    normalise_error,
    play,
)

pytestmark = pytest.mark.ray


def _comparable(run: ToolRun, names: Names) -> tuple:
    to_latest = "--to-latest" in run.args  # the new offsets are the stream's end
    return run.exit, normalise(run.stdout, names, to_latest), normalise_error(run.stderr)


def test_kafka_tools_print_on_cohort_what_they_print_on_kafka(
        cluster, gateway, reference_kafka, java):
    names = Names(unique("tools-orders"), unique("tools-g"), unique("tools-cl"),
                  unique("tools-sg"), unique("tools-cfg"))
    kafka = reference_kafka.bootstrap
    produced: dict[str, int] = {}

    def kafka_topic(topic: str, partitions: int) -> None:
        java.create_topic(kafka, topic, partitions)
        java.produce(kafka, topic, partitions, RECORDS)
        produced[topic] = RECORDS

    def kafka_append(topic: str, partitions: int) -> None:
        java.produce(kafka, topic, partitions, 5, start=produced[topic])
        produced[topic] += 5

    systems = [System("kafka", kafka, kafka_topic, kafka_append),
               System("cohort", gateway, lambda t, n: cluster.create_topic(t, n),
                      lambda t, n: None)]
    with ThreadPoolExecutor(2) as pool:
        on_kafka, on_cohort = pool.map(lambda s: play(s, java, names), systems)

    differences = []
    for k, c in zip(on_kafka, on_cohort, strict=True):
        assert (k.step, k.args) == (c.step, c.args)
        expected, got = _comparable(k, names), _comparable(c, names)
        if expected != got:
            differences.append(f"{k.step} ({' '.join(k.args)}):\n  Kafka:  {expected}\n"
                               f"  Cohort: {got}")
    assert differences == [], "\n".join(differences)
    # The comparison compared something: the tables have rows on both sides.
    described = {r.step: normalise(r.stdout, names) for r in on_cohort}
    assert len(described["consumer describe"]) == 3
    assert len(described["share describe members"]) == 2
