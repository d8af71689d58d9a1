"""One scenario of Kafka's command-line tools, played on Cohort's gateway and on Kafka 4.4 with
the same topic and group names, and the tools' output normalised for comparison.

The scenario: a topic of two partitions; a consumer group on the consumer protocol (two Java
consumers, each committing offset 20 of its partition), a classic one (two, committing 10) and
a share group (one Java share consumer, which accepts what it gets). ``kafka-configs`` sets,
describes and refuses group configs; ``kafka-consumer-groups`` lists and describes the groups
while they run, then, once their members left, describes, resets and deletes them;
``kafka-share-groups`` describes the share group while it runs and once it left, and deletes
it.

What differs by nature, not by behaviour, is normalised (``NORMALISED``, each rule with its
reason): hosts, ports, broker ids, member ids, client ids, epochs, the broker's settings, and
what depends on the records. Kafka's topic holds what the scenario produced (30 records a
partition, and 5 more at a time while the share consumer waits); Cohort's is the gateway's
synthetic stream (no upstream), whose end grows with time and has no relation to Kafka's:
LOG-END-OFFSET, LAG, a share-partition's START-OFFSET and ``--to-latest`` depend on it, so they
are compared as "a number" (or "-"). CURRENT-OFFSET and every reset other than ``--to-latest``
do not: the consumers commit fixed offsets.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from actors.tools.java_clients import Event, JavaClients
from actors.tools.reference_kafka import CONFIGS, CONSUMER_GROUPS, SHARE_GROUPS

PARTITIONS = 2
RECORDS = 30  # produced to each partition on Kafka; Cohort's stream is far past it
CONSUMER_AT, CLASSIC_AT = 20, 10  # where each group's consumers commit and stop
# The classic consumers' settings, short enough for a test's patience, and one assignor
# (Kafka's default list would pick range too; named so the output does not depend on it).
CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
           "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"}
SETTLE_TIMEOUT_S = 90.0  # Kafka's consumer groups heartbeat every 5 s


@dataclass(frozen=True)
class Names:
    topic: str
    consumer_group: str
    classic_group: str
    share_group: str
    config_group: str

    def groups(self) -> set[str]:
        return {self.consumer_group, self.classic_group, self.share_group, self.config_group}


@dataclass(frozen=True)
class ToolRun:
    step: str
    args: tuple[str, ...]
    exit: int
    stdout: str
    stderr: str


@dataclass
class System:
    """A bootstrap with what the scenario needs of it: ``make_topic(name, partitions)``
    leaves a topic with at least RECORDS records a partition, ``append(name, partitions)``
    adds a few more to each."""
    name: str
    bootstrap: str
    make_topic: Callable[[str, int], None]
    append: Callable[[str, int], None]


def play(system: System, java: JavaClients, names: Names) -> list[ToolRun]:
    """Run the scenario on ``system``; every tool's run, in order."""
    runs: list[ToolRun] = []
    b = system.bootstrap

    def tool(step: str, main: str, *args: str) -> ToolRun:
        rc, out, err = java.tool(main, "--bootstrap-server", b, *args)
        runs.append(ToolRun(step, args, rc, out, err))
        return runs[-1]

    def settled_tool(step: str, main: str, *args: str,
                     shows: Callable[[str], bool]) -> ToolRun:
        """Run a tool until its output ``shows`` what the scenario did (Kafka's broker applies
        a group config from its metadata log a moment after the alter returns; Cohort's
        controller before); only the last run counts."""
        def done() -> ToolRun | None:
            rc, out, err = java.tool(main, "--bootstrap-server", b, *args)
            return ToolRun(step, args, rc, out, err) if shows(out) else None
        runs.append(until(done, SETTLE_TIMEOUT_S))
        return runs[-1]

    def groups(step: str, *args: str) -> ToolRun:
        return tool(step, CONSUMER_GROUPS, *args)

    def configs(step: str, *args: str) -> ToolRun:
        return tool(step, CONFIGS, "--entity-type", "groups", *args)

    def shares(step: str, *args: str) -> ToolRun:
        return tool(step, SHARE_GROUPS, *args)

    t, g, c, s, x = (names.topic, names.consumer_group, names.classic_group,
                     names.share_group, names.config_group)
    system.make_topic(t, PARTITIONS)

    # The share group's consumer starts at the log end (share.auto.offset.reset latest, set
    # here explicitly): on Kafka records are produced until it acknowledged some of each
    # partition; Cohort's stream grows by itself.
    configs("share config", "--entity-name", s, "--alter", "--add-config",
            "share.auto.offset.reset=latest")

    # The KIP-848 group's session is Kafka's default on both systems (the test session's
    # Cohort gives groups 4 s): a Java heartbeat thread held back more than 4 s on a loaded
    # machine had Cohort's group fence a member and rebalance after settling (ci65, ci70).
    configs("consumer session", "--entity-name", g, "--alter", "--add-config",
            "consumer.session.timeout.ms=45000")

    # ---- three live groups, joining at once (Kafka's take seconds to settle: 5 s heartbeats)
    consumer = java.consume(b, t, g, protocol="consumer", instances=2, stop_at=CONSUMER_AT)
    classic = java.consume(b, t, c, protocol="classic", instances=2, stop_at=CLASSIC_AT,
                           config=CLASSIC)
    share = java.share(b, t, s)

    # ---- group configs of a group that does not exist (settable before, as in Kafka)
    configs("configs describe none", "--entity-name", x, "--describe")
    configs("configs alter", "--entity-name", x, "--alter", "--add-config",
            "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=5000")
    settled_tool("configs describe", CONFIGS, "--entity-type", "groups", "--entity-name", x,
                 "--describe", shows=lambda out: "consumer.heartbeat.interval.ms=5000" in out)
    configs("configs delete one", "--entity-name", x, "--alter", "--delete-config",
            "consumer.heartbeat.interval.ms")
    settled_tool("configs describe after delete", CONFIGS, "--entity-type", "groups",
                 "--entity-name", x, "--describe",
                 shows=lambda out: "consumer.heartbeat.interval.ms" not in out)
    configs("configs alter unknown", "--entity-name", x, "--alter", "--add-config",
            "no.such.config=1")
    configs("configs alter not a number", "--entity-name", x, "--alter", "--add-config",
            "consumer.session.timeout.ms=abc")
    configs("configs alter out of range", "--entity-name", x, "--alter", "--add-config",
            "consumer.session.timeout.ms=999999999")

    for run, at in ((consumer, CONSUMER_AT), (classic, CLASSIC_AT)):
        run.wait(lambda events, at=at: settled(events, t, at), SETTLE_TIMEOUT_S)

    groups("list", "--list")
    groups("list state", "--list", "--state")
    groups("list type", "--list", "--type")
    for group, kind in ((g, "consumer"), (c, "classic")):
        groups(f"{kind} describe", "--describe", "--group", group)
        groups(f"{kind} describe members", "--describe", "--group", group, "--members")
        groups(f"{kind} describe members verbose", "--describe", "--group", group,
               "--members", "--verbose")
        groups(f"{kind} describe state", "--describe", "--group", group, "--state")
        groups(f"{kind} describe state verbose", "--describe", "--group", group, "--state",
               "--verbose")
        groups(f"{kind} describe offsets verbose", "--describe", "--group", group,
               "--offsets", "--verbose")
    configs("configs describe live group", "--entity-name", g, "--describe")
    groups("reset active", "--reset-offsets", "--group", g, "--topic", t, "--to-offset", "5",
           "--execute")
    groups("delete active", "--delete", "--group", g)

    consumer.stop()
    classic.stop()

    # ---- the groups once their members left
    for group, kind in ((g, "consumer"), (c, "classic")):
        groups(f"{kind} empty describe", "--describe", "--group", group)
        groups(f"{kind} empty describe members", "--describe", "--group", group, "--members")
        groups(f"{kind} empty describe state", "--describe", "--group", group, "--state")
    groups("list state empty", "--list", "--state", "Empty")
    groups("reset dry run", "--reset-offsets", "--group", g, "--topic", t, "--to-offset", "5",
           "--dry-run")
    groups("reset to offset", "--reset-offsets", "--group", g, "--topic", t, "--to-offset",
           "5", "--execute")
    groups("reset shift", "--reset-offsets", "--group", g, "--topic", f"{t}:1",
           "--shift-by", "3", "--execute")
    groups("reset earliest", "--reset-offsets", "--group", c, "--all-topics",
           "--to-earliest", "--execute")
    groups("reset latest dry run", "--reset-offsets", "--group", c, "--all-topics",
           "--to-latest", "--dry-run")
    groups("describe after resets", "--describe", "--group", g, "--offsets")
    groups("classic describe after reset", "--describe", "--group", c)
    groups("delete offsets", "--delete-offsets", "--group", c, "--topic", f"{t}:0")
    groups("delete", "--delete", "--group", g)
    groups("delete both", "--delete", "--group", c, "--group", g)
    groups("describe deleted", "--describe", "--group", g)
    groups("list after delete", "--list")

    # ---- the share group, once it acknowledged records of each partition
    def acknowledged_everywhere() -> bool:
        system.append(t, PARTITIONS)
        with contextlib.suppress(TimeoutError):
            share.wait(lambda events: acknowledged_partitions(events) == PARTITIONS, 1.0)
        return acknowledged_partitions(share.events()) == PARTITIONS

    until(acknowledged_everywhere, SETTLE_TIMEOUT_S)
    shares("share list", "--list")
    shares("share describe", "--describe", "--group", s)
    shares("share describe members", "--describe", "--group", s, "--members")
    shares("share describe members verbose", "--describe", "--group", s, "--members",
           "--verbose")
    shares("share describe state", "--describe", "--group", s, "--state")
    shares("share describe state verbose", "--describe", "--group", s, "--state",
           "--verbose")
    share.stop()
    shares("share empty describe", "--describe", "--group", s)
    shares("share empty describe state", "--describe", "--group", s, "--state")
    shares("share delete", "--delete", "--group", s)
    shares("share describe deleted", "--describe", "--group", s)
    return runs


def settled(events: list[Event], topic: str, at: int) -> bool:
    """Both consumers own one partition each and each partition's offset ``at`` is
    committed."""
    owned: dict[int, list[str]] = {}
    done: set[str] = set()
    for e in events:
        if e["event"] == "assignment":
            owned[e["instance"]] = e["partitions"]
        elif e["event"] == "committed":
            done |= {p for p, o in e["offsets"].items() if o == at}
    parts = sorted(p for ps in owned.values() for p in ps)
    return (parts == [f"{topic}-{p}" for p in range(PARTITIONS)]
            and all(len(ps) == 1 for ps in owned.values()) and len(done) == PARTITIONS)


def acknowledged_partitions(events: list[Event]) -> int:
    return len({e["partition"] for e in events
                if e["event"] == "acknowledged" and e["error"] is None})


def until(predicate: Callable[[], object], timeout_s: float, every_s: float = 0.2) -> object:
    """Poll ``predicate`` until it returns something truthy (returned), or fail."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(every_s)
    return value


# ---------------------------------------------------------------------------- normalising

# What differs between the two by nature, by column of the tools' tables: (columns, reason).
IDENTITY_COLUMNS = ({"CONSUMER-ID", "MEMBER-ID"}, "member ids are drawn at random")
CLIENT_COLUMNS = ({"CLIENT-ID"}, "the driver's client ids count its commands")
HOST_COLUMNS = ({"HOST"}, "hosts are normalised (Kafka prints InetAddress.toString, "
                          "'/127.0.0.1'; Cohort the address alone, until the conformance "
                          "work's fix lands)")
COORDINATOR_COLUMNS = ({"COORDINATOR(ID)"},
                       "each of Cohort's partitions is a broker of its own, 1000 + p "
                       "(docs/decisions.md, 'Each partition is a broker for its groups'), "
                       "on a port of its own")
STREAM_COLUMNS = ({"LOG-END-OFFSET", "LAG", "START-OFFSET"},
                  "the records: Kafka's topic holds what the scenario produced, Cohort's "
                  "synthetic stream grows with time")
EPOCH_COLUMNS = ({"CURRENT-EPOCH", "TARGET-EPOCH", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                  "ASSIGNMENT-EPOCH", "MEMBER-EPOCH"},
                 "epochs count joins and turns (Cohort bumps once per turn for the joins it "
                 "holds, Kafka once per join; Kafka 4.3 starts a group at 1, KAFKA-20268, and "
                 "bumps a share group again once its partitions are initialised): compared "
                 "as 'all equal' within one output, i.e. the group is settled")
NORMALISED_COLUMNS = (IDENTITY_COLUMNS, CLIENT_COLUMNS, HOST_COLUMNS, COORDINATOR_COLUMNS,
                      STREAM_COLUMNS)
# Rewrites of whole text: (pattern, replacement, reason).
NORMALISED_TEXT = (
    (r"(\d+\.){3}\d+:\d+\s+\((\d+)\)", "<broker>", COORDINATOR_COLUMNS[1]),
    (r"(\d+\.){3}\d+:\d+", "<host:port>", "the brokers' ports are the kernel's choice"),
    (r"STATIC_BROKER_CONFIG:[^,}]*, ", "",
     "the test Cohort sets its brokers' group timeouts (RAY_TEST_CONFIG) where the reference "
     "broker keeps Kafka's defaults; tests/protocol/wire/test_group_configs.py checks Cohort "
     "lists such a setting as Kafka does"),
    (r"in the range \d+ to \d+ inclusive", "in the range <min> to <max> inclusive",
     "the bounds are broker settings, shorter in the test Cohort"),
)


def normalise(text: str, names: Names, stream_steps: bool = False) -> list[str]:
    """The lines of a tool's output with ``NORMALISED_TEXT`` applied, whitespace collapsed,
    the ``NORMALISED_COLUMNS`` replaced by their column's name (``<n>`` for numbers that
    depend on the stream, and for NEW-OFFSET when ``stream_steps``), epochs by ``<epoch>``
    when all equal, rows of other groups than the scenario's dropped (the session's other
    tests leave theirs) and table rows sorted under their header."""
    text = text.replace("COORDINATOR (ID)", "COORDINATOR(ID)")
    for pattern, replacement, _ in NORMALISED_TEXT:
        text = re.sub(pattern, replacement, text)
    ours = names.groups()
    out: list[str] = []
    header: list[str] | None = None
    rows: list[list[str]] = []

    def flush() -> None:
        out.extend(sorted(" ".join(r) for r in _epochs(header, rows)))
        rows.clear()

    for raw in text.splitlines():
        cells = raw.split()
        is_header = bool(cells) and cells[0] in ("GROUP", "TOPIC") and all(
            c.upper() == c for c in cells)
        if is_header or not cells:
            flush()
            header = cells if is_header else None
            if is_header:
                out.append(" ".join(cells))
        elif header is not None and len(cells) == len(header):
            if header[0] != "GROUP" or cells[0] in ours:
                rows.append([_cell(h, v, stream_steps) for h, v in zip(header, cells,
                                                                          strict=True)])
        elif len(cells) == 1 and header is None:  # --list: one group a line
            if cells[0] in ours:
                rows.append(cells)
        else:
            flush()
            header = None
            out.append(" ".join(cells))
    flush()
    return out


def normalise_error(text: str) -> list[str]:
    """A tool's stderr without the stack frames (the same tool and exception, other call
    paths), with ``NORMALISED_TEXT`` applied."""
    for pattern, replacement, _ in NORMALISED_TEXT:
        text = re.sub(pattern, replacement, text)
    return [line.strip() for line in text.splitlines()
            if line.strip() and not re.match(r"\s*(at |\.\.\. \d+ more)", line)]


def _cell(column: str, value: str, stream_steps: bool) -> str:
    if value == "-":
        return value
    if any(column in columns for columns, _ in NORMALISED_COLUMNS):
        stream = column in STREAM_COLUMNS[0]
        return "<n>" if stream and re.fullmatch(r"-?\d+", value) else f"<{column.lower()}>"
    if stream_steps and column == "NEW-OFFSET" and re.fullmatch(r"\d+", value):
        return "<n>"
    return value


def _epochs(header: list[str] | None, rows: list[list[str]]) -> list[list[str]]:
    """Rows with their epochs as ``<epoch>`` when every epoch in them is the same number."""
    if header is None:
        return rows
    at = [i for i, h in enumerate(header) if h in EPOCH_COLUMNS[0]]
    values = {row[i] for row in rows for i in at if row[i] != "-"}
    if len(values) != 1:
        return rows
    return [[("<epoch>" if i in at and v != "-" else v) for i, v in enumerate(row)]
            for row in rows]
