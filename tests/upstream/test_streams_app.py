"""A real Kafka Streams 4.4 app (``group.protocol=streams``, KIP-1071) against Cohort in front of
each upstream: Cohort coordinates the streams group and creates its internal topics upstream;
the records (input, repartition, changelog, output) live upstream. The same scenarios run
against Apache Kafka 4.4 itself in tests/reference/test_streams_reference.py, which proves the
harness (tests/streams_scenario.py).

The app is a word count behind a repartition, with a changelogged store; the output's final
DISTINCT count per word is exact even across kills (actors/tools/streams_app.py says why).
"""

from __future__ import annotations

import pytest

from actors.tools.java_clients import JavaClients
from tests.streams_scenario import (
    RECORDS,
    App,
    assert_describe_lists_members_and_tasks,
    assert_internal_topics_exist,
    assert_standbys_on_other_instances,
    describe,
)

# In front of Apache Kafka 4.4 in the suite: every scenario against Tansu 0.6 too doubled its
# minutes (all 12 passed, 7.3 min: docs/decisions.md, "Streams groups").
pytestmark = pytest.mark.parametrize("upstream", ["kafka"], indirect=True)


@pytest.fixture(scope="module")
def steady(cohort, tmp_path_factory):
    """Two instances (two JVMs) with one standby per stateful task through Cohort, stable,
    then fed (one app per upstream: ``cohort`` follows the session's ``upstream``)."""
    app = App(cohort.bootstrap, tmp_path_factory.mktemp("streams"), standbys=1)
    try:
        app.prepare()
        app.add_process()
        app.add_process()
        app.wait_settled()
        app.produce(RECORDS)
        yield app
    finally:
        app.stop()


def test_the_group_becomes_stable_with_every_task_active_on_one_instance(steady):
    held = steady.held()
    assert sorted(held) == [0, 1]
    assert all(active for active, _ in held.values())


def test_cohort_creates_the_repartition_and_changelog_topics_upstream(steady, upstream):
    assert_internal_topics_exist(steady)  # as Cohort's gateway shows them
    assert_internal_topics_exist(steady, upstream.bootstrap)  # and on the upstream itself


def test_the_output_counts_are_exact_for_the_input(steady):
    counts = steady.counts()
    assert {word: d for word, (d, _) in counts.items()} == dict(steady.expected)
    assert all(raw == distinct for distinct, raw in counts.values()), counts


def test_standbys_set_as_a_group_config_are_placed_on_another_instance(steady):
    assert_standbys_on_other_instances(steady)


def test_kafka_streams_groups_describe_lists_the_members_and_their_tasks(steady):
    with JavaClients() as java:
        text = describe(steady, java.tool)
    assert_describe_lists_members_and_tasks(steady, text)


def test_killing_an_instance_and_the_coordinator_mid_run_changes_no_final_count(
        cohort, tmp_path):
    app = App(cohort.bootstrap, tmp_path)
    try:
        app.prepare()
        app.add_process()
        victim = app.add_process()
        app.wait_settled()
        app.produce(RECORDS // 3)
        victim.kill()  # whatever it processed but did not commit is replayed elsewhere
        app.produce(RECORDS // 3)
        cohort.kill_partition(cohort.partition_for(app.id))  # the group's coordinator
        app.produce(RECORDS - 2 * (RECORDS // 3))
        counts = app.counts()
        assert {word: d for word, (d, _) in counts.items()} == dict(app.expected)
        app.wait_settled()  # the survivor holds every task once the victim's session ends
    finally:
        app.stop()
