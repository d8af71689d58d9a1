"""A real Kafka Streams 4.4 app (``group.protocol=streams``) on Apache Kafka 4.4 itself: the
scenarios tests/upstream/test_streams_app.py runs against Cohort, here against the reference
coordinator, which proves the harness (tests/streams_scenario.py) asks only what Kafka does.

The app is a word count behind a repartition, with a changelogged store; the output's final
DISTINCT count per word is exact even across kills (actors/tools/streams_app.py says why).
"""

from __future__ import annotations

import pytest

from tests.streams_scenario import (
    RECORDS,
    App,
    assert_describe_lists_members_and_tasks,
    assert_internal_topics_exist,
    assert_standbys_on_other_instances,
    describe,
)


@pytest.fixture(scope="module")
def steady(reference_kafka, tmp_path_factory):
    """Two instances (two JVMs) with one standby per stateful task, stable, then fed."""
    app = App(reference_kafka.bootstrap, tmp_path_factory.mktemp("streams"), standbys=1)
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
    assert all(active for active, _ in held.values())  # both instances work


def test_the_coordinator_creates_the_repartition_and_changelog_topics(steady):
    assert_internal_topics_exist(steady)


def test_the_output_counts_are_exact_for_the_input(steady):
    counts = steady.counts()
    assert {word: d for word, (d, _) in counts.items()} == dict(steady.expected)
    # A calm run replays nothing: every update counted a new record.
    assert all(raw == distinct for distinct, raw in counts.values()), counts


def test_standbys_set_as_a_group_config_are_placed_on_another_instance(steady):
    assert_standbys_on_other_instances(steady)


def test_kafka_streams_groups_describe_lists_the_members_and_their_tasks(steady,
                                                                         reference_kafka):
    text = describe(steady, reference_kafka.run_tool)
    assert_describe_lists_members_and_tasks(steady, text)


def test_killing_an_instance_mid_run_changes_no_final_count(reference_kafka, tmp_path):
    app = App(reference_kafka.bootstrap, tmp_path)
    try:
        app.prepare()
        app.add_process()
        victim = app.add_process()
        app.wait_settled()
        app.produce(RECORDS // 2)
        victim.kill()  # whatever it processed but did not commit is replayed elsewhere
        app.produce(RECORDS - RECORDS // 2)
        counts = app.counts()
        assert {word: d for word, (d, _) in counts.items()} == dict(app.expected)
        app.wait_settled()  # the survivor holds every task once the victim's session ends
    finally:
        app.stop()
