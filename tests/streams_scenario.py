"""The Kafka Streams scenarios (``actors/tools/streams_app.py``'s word count in a streams group)
that run against Apache Kafka 4.4 itself (tests/reference/test_streams_reference.py, which
proves the harness) and against Cohort in front of an upstream
(tests/upstream/test_streams_app.py): the same steps and assertions on one bootstrap address.

Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import Path

from actors.tools import streams_app as sa
from actors.tools.reference_kafka import STREAMS_GROUPS

PARTITIONS = 2
RECORDS = 300
# Short enough that a killed instance's tasks move within a test's patience; the reference
# broker's bounds allow them (actors/tools/reference_kafka.py).
GROUP_CONFIGS = {"streams.initial.rebalance.delay.ms": 0, "streams.session.timeout.ms": 6000,
                 "streams.heartbeat.interval.ms": 500}
SETTLE_S = 120.0


class App:
    """The word count under a fresh application id: its topics, its group configs, and the
    processes (JVMs) running it, one KafkaStreams instance each."""

    def __init__(self, bootstrap: str, state_dir: Path, *, standbys: int = 0,
                 partitions: int = PARTITIONS) -> None:
        self.bootstrap = bootstrap
        self.id = f"wc-{uuid.uuid4().hex[:8]}"
        self.input, self.output = f"{self.id}-words", f"{self.id}-counts"
        self.partitions = partitions
        self.standbys = standbys
        self.state_dir = state_dir
        self.processes: list[sa.StreamsProcess] = []
        self.expected: Counter[str] = Counter()
        self.produced = 0

    def prepare(self) -> App:
        sa.create_topic(self.bootstrap, self.input, self.partitions)
        sa.create_topic(self.bootstrap, self.output, self.partitions)
        sa.set_group_configs(self.bootstrap, self.id,
                             {**GROUP_CONFIGS, "streams.num.standby.replicas": self.standbys})
        return self

    def add_process(self) -> sa.StreamsProcess:
        first = sum(len(p.instances) for p in self.processes)
        process = sa.StreamsProcess(self.bootstrap, self.id, self.input, self.output,
                                    self.state_dir, first=first).start()
        self.processes.append(process)
        return process

    def live(self) -> list[sa.StreamsProcess]:
        return [p for p in self.processes if p.killed_ms is None]

    def wait_settled(self, timeout_s: float = SETTLE_S) -> None:
        """Wait until every live instance is RUNNING and the tasks are held as the group's
        assignment says they must be (``streams_app.settled``)."""
        tasks = sa.tasks_of(self.partitions)
        self.live()[0].wait(lambda _: sa.settled(self.processes, tasks, self.standbys),
                            timeout_s)

    def produce(self, records: int) -> None:
        self.expected += sa.produce_words(self.bootstrap, self.input, records,
                                          start=self.produced)
        self.produced += records

    def counts(self, timeout_s: float = sa.TIMEOUT_S) -> dict[str, tuple[int, int]]:
        """Wait for the output to show exactly the expected DISTINCT counts."""
        return sa.wait_for_counts(self.bootstrap, self.output, self.partitions, self.expected,
                                  timeout_s)

    def held(self) -> dict[int, tuple[set[str], set[str]]]:
        return sa.tasks_now(e for p in self.live() for e in p.events())

    def stop(self) -> None:
        for p in self.processes:
            p.stop()


def assert_internal_topics_exist(app: App, bootstrap: str | None = None) -> None:
    """The repartition topic and the changelog exist with the input's partition count, as
    ``bootstrap`` (the app's own unless given: say, the upstream behind Cohort) lists them."""
    topics = sa.topic_partitions(bootstrap or app.bootstrap)
    assert topics.get(sa.repartition_topic(app.id)) == app.partitions, topics
    assert topics.get(sa.changelog_topic(app.id)) == app.partitions, topics


def assert_standbys_on_other_instances(app: App) -> None:
    held = app.held()
    for task in sa.stateful_tasks_of(app.partitions):
        owners = [i for i, (active, _) in held.items() if task in active]
        standbys = [i for i, (_, standby) in held.items() if task in standby]
        assert len(owners) == 1 and len(standbys) == app.standbys, (task, held)
        assert owners[0] not in standbys, (task, held)


def describe(app: App, run_tool) -> str:
    """``kafka-streams-groups --describe --members --verbose`` of the app's group: its text.
    ``run_tool(main_class, *args)`` is ``ReferenceKafka.run_tool`` or ``JavaClients.tool``."""
    rc, out, err = run_tool(STREAMS_GROUPS, "--bootstrap-server", app.bootstrap, "--describe",
                            "--group", app.id, "--members", "--verbose")
    assert rc == 0, err
    return out


def assert_describe_lists_members_and_tasks(app: App, text: str) -> None:
    """Every live instance is a member in the tool's table (one row, by its client id), its
    ACTIVE column (``ACTIVE: 0:[0,1]; 1:[0]; TARGET-ACTIVE: ...``) naming the tasks it
    reported."""
    held = app.held()
    lines = [line for line in text.splitlines() if line.startswith(app.id)]
    assert len(lines) == len(held), text
    for instance, (active, _) in held.items():
        client = f"{app.id}-{instance}-"
        mine = [line for line in lines if client in line]
        assert len(mine) == 1, (client, text)
        assert _described_active(mine[0]) == active, (active, mine[0])


def _described_active(line: str) -> set[str]:
    """The tasks of a member row's ``ACTIVE:`` part, as ``"S_P"``."""
    part = re.split(r"[A-Z][A-Z-]+:", line.split(" ACTIVE:", 1)[1], maxsplit=1)[0]
    tasks = set()
    for group in part.split(";"):
        if ":" in group:
            subtopology, partitions = group.strip().split(":", 1)
            tasks |= {f"{subtopology}_{p}" for p in partitions.strip("[] ").split(",") if p}
    return tasks
