"""Benchmark the server assignors: time per assignment and partitions moved.

Run: ``python bench/assignors.py [--quick]``. For ``uniform`` and ``range``, over a grid
of (members, partitions), with homogeneous subscriptions (everyone subscribes to every
topic) and heterogeneous ones (each member a seeded random half of the topics, plus one
topic so that every topic has subscribers), it measures:

* ``first_s``: the first assignment, from no current assignment;
* ``stable_s``: re-running on that output (nothing changed; what a heartbeat-driven
  recomputation costs);
* ``leave_s``: the reassignment after one member leaves;
* ``moved``: partitions whose owner changed after that leave, next to ``leaver_had``, the
  partitions the leaver owned (a sticky assignor moves no more than those when it can).

Prints a table and writes the same figures to ``bench/results/assignors.json``.

``--kafka-grid`` runs Kafka's own JMH grid instead (``ServerSideAssignorBenchmark`` and
``TargetAssignmentBuilderBenchmark`` in apache/kafka's jmh-benchmarks): members x topics x
partitions per member (``partitionsToMemberRatio``; each topic has members x ratio / topics
partitions), homogeneous subscriptions (everyone, every topic) and heterogeneous ones (five
buckets of members, each subscribed to its fifth of the topics), full (everyone assigned from
nothing) and incremental (the group minus one member is assigned first; then a new member
joins, subscribed as the last bucket, and that reassignment is timed), no racks. Each case is
timed as JMH's average time (after warm-up runs), and Kafka's published figure is printed
beside Cohort's where Kafka published one. ``--members``, ``--topics``, ``--ratios``,
``--assignors`` narrow the grid (the whole of it takes a while in Python).

Times are this process's CPU time (``time.process_time``), not wall time: the machine is
shared, and other processes' load would otherwise land in Cohort's figures.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignors import (
    AssignmentSpec,
    GroupAssignment,
    MemberSpec,
    PartitionAssignor,
    RangeAssignor,
    TopicSpec,
    UniformAssignor,
)

FULL_GRID = [(10, 1_000), (100, 10_000), (1_000, 10_000), (1_000, 100_000), (10_000, 100_000)]
QUICK_GRID = [(10, 100), (100, 1_000), (1_000, 10_000)]
RESULTS = Path(__file__).resolve().parent / "results" / "assignors.json"


def topics_for(num_partitions: int) -> dict[str, TopicSpec]:
    """Up to 100 topics of equal size (100 x 1,000 at 100,000 partitions)."""
    count = min(100, max(1, num_partitions // 100))
    size = num_partitions // count
    return {f"t{i:03d}": TopicSpec(f"topic-{i}", size) for i in range(count)}


def subscriptions(
    num_members: int, topic_ids: list[str], heterogeneous: bool, seed: int = 7
) -> list[frozenset[str]]:
    everything = frozenset(topic_ids)
    if not heterogeneous:
        return [everything] * num_members
    rng = random.Random(seed)
    subs = []
    for m in range(num_members):
        chosen = {t for t in topic_ids if rng.random() < 0.5}
        chosen.add(topic_ids[m % len(topic_ids)])
        subs.append(frozenset(chosen))
    return subs


def make_spec(
    member_ids: list[str],
    subs: list[frozenset[str]],
    topics: dict[str, TopicSpec],
    current: GroupAssignment | None,
) -> AssignmentSpec:
    members = {}
    for member_id, sub in zip(member_ids, subs, strict=True):
        assigned = current.members.get(member_id, {}) if current else {}
        members[member_id] = MemberSpec(subscribed_topic_ids=sub, assigned_partitions=assigned)
    return AssignmentSpec(members=members, topics=topics)


def owners(assignment: GroupAssignment) -> dict[tuple[str, int], str]:
    return {(t, p): m for m, a in assignment.members.items() for t, ps in a.items() for p in ps}


def timed(assignor: PartitionAssignor, spec: AssignmentSpec) -> tuple[GroupAssignment, float]:
    start = time.process_time()
    result = assignor.assign(spec)
    return result, time.process_time() - start


def run_case(
    assignor: PartitionAssignor, num_members: int, num_partitions: int, heterogeneous: bool
) -> dict[str, object]:
    topics = topics_for(num_partitions)
    member_ids = [f"member-{i:05d}" for i in range(num_members)]
    subs = subscriptions(num_members, sorted(topics), heterogeneous)
    first, first_s = timed(assignor, make_spec(member_ids, subs, topics, None))
    stable, stable_s = timed(assignor, make_spec(member_ids, subs, topics, first))
    leaver = 0  # the first member: under range it always owns partitions
    rest_ids = member_ids[:leaver] + member_ids[leaver + 1 :]
    rest_subs = subs[:leaver] + subs[leaver + 1 :]
    after, leave_s = timed(assignor, make_spec(rest_ids, rest_subs, topics, first))
    before_owner, after_owner = owners(first), owners(after)
    moved = sum(1 for tp, m in after_owner.items() if before_owner.get(tp) != m)
    leaver_had = sum(len(ps) for ps in first.members[member_ids[leaver]].values())
    return {
        "assignor": assignor.name,
        "subscriptions": "heterogeneous" if heterogeneous else "homogeneous",
        "members": num_members,
        "partitions": num_partitions,
        "topics": len(topics),
        "first_s": round(first_s, 4),
        "stable_s": round(stable_s, 4),
        "leave_s": round(leave_s, 4),
        "moved": moved,
        "leaver_had": leaver_had,
        "stable_unchanged": stable.members == first.members,
    }


def print_ratios(rows: list[dict[str, object]]) -> None:
    """Ratios between figures of this one run: comparable across noisy, shared machines."""
    print("\nratios within this run (a noisy machine moves seconds, not these):")
    print(
        f"{'subscriptions':13} {'members':>7} {'partitions':>10} {'range/uniform':>13} "
        f"{'uniform x smallest':>18}"
    )
    by_key = {(r["assignor"], r["subscriptions"], r["members"], r["partitions"]): r for r in rows}
    smallest = min(
        (r for r in rows if r["assignor"] == "uniform" and r["subscriptions"] == "homogeneous"),
        key=lambda r: r["partitions"],
    )
    base = max(float(smallest["first_s"]), 1e-6)
    for (name, subs, members, parts), row in by_key.items():
        if name != "uniform":
            continue
        other = by_key[("range", subs, members, parts)]
        ratio = float(other["first_s"]) / max(float(row["first_s"]), 1e-6)
        growth = float(row["first_s"]) / base
        print(f"{subs:13} {members:>7} {parts:>10} {ratio:>13.2f} {growth:>18.1f}")


# ------------------------------------------------------------------ Kafka's JMH grid

KAFKA_MEMBERS = (100, 500, 1_000, 5_000, 10_000)
KAFKA_RATIOS = (5, 10, 50)
KAFKA_TOPICS = (10, 100, 1_000)
KAFKA_BUCKETS = 5  # MAX_BUCKET_COUNT of the heterogeneous subscriptions
# Kafka's published figures (ms), keyed (assignor, subscriptions, type, members, topics,
# ratio); type None: published without saying full or incremental (shown beside both).
KAFKA_PUBLISHED: dict[tuple, float] = {
    ("uniform", "homogeneous", "incremental", 10_000, 1_000, 10): 17.7,
    ("uniform", "heterogeneous", None, 10_000, 1_000, 10): 342.8,
    ("range", "homogeneous", None, 10_000, 1_000, 10): 37.9,
    ("range", "heterogeneous", None, 10_000, 1_000, 10): 172.4,
    ("range", "homogeneous", None, 100, 100, 10): 0.052,
    ("range", "heterogeneous", None, 100, 100, 10): 0.172,
    ("builder", "homogeneous", "incremental", 10_000, 1_000, 10): 40.2,
}


def kafka_published(name: str, subs: str, kind: str, members: int, topics: int,
                    ratio: int) -> float | None:
    return KAFKA_PUBLISHED.get((name, subs, kind, members, topics, ratio),
                               KAFKA_PUBLISHED.get((name, subs, None, members, topics, ratio)))


def kafka_topics(members: int, ratio: int, topics: int) -> dict[str, TopicSpec]:
    size = members * ratio // topics
    return {f"topic-id-{i:04d}": TopicSpec(f"topic{i}", size) for i in range(topics)}


def kafka_subscriptions(members: int, topic_ids: list[str],
                        heterogeneous: bool) -> list[frozenset[str]]:
    """As Kafka's benchmark: everyone everything, or buckets of members with their topics."""
    if not heterogeneous:
        everything = frozenset(topic_ids)
        return [everything] * members
    buckets = min(KAFKA_BUCKETS, members)
    per_bucket_topics = -(-len(topic_ids) // buckets)
    per_bucket_members = -(-members // buckets)
    subs: list[frozenset[str]] = []
    for b in range(buckets):
        chunk = frozenset(topic_ids[b * per_bucket_topics : (b + 1) * per_bucket_topics])
        count = min((b + 1) * per_bucket_members, members) - b * per_bucket_members
        subs += [chunk] * max(count, 0)
    return subs


def kafka_spec(assignor: PartitionAssignor, members: int, ratio: int, topics: int,
               heterogeneous: bool, incremental: bool) -> AssignmentSpec:
    """The spec Kafka's benchmark times: full, or one new member after an assignment."""
    topic_specs = kafka_topics(members, ratio, topics)
    count = members - 1 if incremental else members
    subs = kafka_subscriptions(count, sorted(topic_specs), heterogeneous)
    ids = [f"member{i}" for i in range(count)]
    spec = make_spec(ids, subs, topic_specs, None)
    if not incremental:
        return spec
    first = assignor.assign(spec)
    new_subs = subs[-1] if heterogeneous else subs[0]
    return make_spec([*ids, "newMember"], [*subs, new_subs], topic_specs, first)


def average_ms(fn, min_runs: int = 3, min_s: float = 0.5) -> float:
    """JMH's average time, roughly: one warm-up run, then runs until both minimums are met."""
    fn()
    runs, started = 0, time.process_time()
    while runs < min_runs or time.process_time() - started < min_s:
        fn()
        runs += 1
    return (time.process_time() - started) / runs * 1000


def builder_case(members: int, ratio: int, topics: int) -> tuple[float, float]:
    """TargetAssignmentBuilderBenchmark: a homogeneous group of members - 1 holding the
    uniform assignor's target, plus one new member; Cohort's builder (the assignor spec from
    the group, the assignment, the records of the targets that changed) is timed, warm (its
    cache made by the previous run, as in a running coordinator) and cold (the first run).
    The group is made by replaying its records, as a coordinator's is."""
    from protocol.consumer.group import ConsumerGroup
    from protocol.consumer.records import (
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupMemberMetadataValue,
        ConsumerGroupTargetAssignmentMemberKey,
    )
    from protocol.consumer.target_assignment import compute_target, target_records
    from protocol.metadata import MetadataImage, TopicMetadata
    from protocol.records import Record

    size = members * ratio // topics
    image = MetadataImage([TopicMetadata(f"topic-id-{i:04d}", f"topic-{i}", size)
                           for i in range(topics)])
    group = ConsumerGroup("benchmark-group")

    def join(mid: str) -> None:
        names = tuple(f"topic-{i}" for i in range(topics))  # each member its own tuple
        value = ConsumerGroupMemberMetadataValue(subscribed_topic_names=names)
        group.replay(Record(ConsumerGroupMemberMetadataKey(group.group_id, mid), value))

    for i in range(members - 1):
        join(f"member{i}")
    for mid, value in compute_target(group, image, "uniform").items():
        group.replay(Record(ConsumerGroupTargetAssignmentMemberKey(group.group_id, mid), value))
    join("newMember")

    def build() -> None:
        target_records(group, compute_target(group, image, "uniform"), 1)

    group.builder_cache.clear()  # cold: as after a load, before the builder has run once
    started = time.process_time()
    build()
    cold_ms = (time.process_time() - started) * 1000
    return average_ms(build), cold_ms


def run_kafka_grid(args) -> None:
    assignors = {"uniform": UniformAssignor(), "range": RangeAssignor()}
    header = (f"{'case':<9} {'subscriptions':13} {'type':11} {'members':>7} {'topics':>6} "
              f"{'ratio':>5} {'partitions':>10} {'cohort ms':>10} {'kafka ms':>9} "
              f"{'cohort/kafka':>12}")
    print(header)
    print("-" * len(header))
    rows = []

    def report(name, subs, kind, members, topics, ratio, ms):
        kafka = kafka_published(name, subs, kind, members, topics, ratio)
        parts = members * ratio // topics * topics
        shown = f"{kafka:9.3f}" if kafka is not None else f"{'':>9}"
        ratio_s = f"{ms / kafka:12.2f}" if kafka is not None else ""
        print(f"{name:<9} {subs:13} {kind:11} {members:>7} {topics:>6} {ratio:>5} "
              f"{parts:>10} {ms:>10.3f} {shown} {ratio_s}", flush=True)
        rows.append({"case": name, "subscriptions": subs, "type": kind, "members": members,
                     "topics": topics, "ratio": ratio, "cohort_ms": round(ms, 4),
                     "kafka_ms": kafka})

    for name in args.assignors:
        for heterogeneous in (False, True):
            subs = "heterogeneous" if heterogeneous else "homogeneous"
            for incremental in (False, True):
                kind = "incremental" if incremental else "full"
                for members in args.members:
                    for topics in args.topics:
                        if heterogeneous and topics < min(KAFKA_BUCKETS, members):
                            continue  # Kafka's benchmark refuses these
                        for ratio in args.ratios:
                            spec = kafka_spec(assignors[name], members, ratio, topics,
                                              heterogeneous, incremental)
                            ms = average_ms(lambda a=assignors[name], s=spec: a.assign(s))
                            report(name, subs, kind, members, topics, ratio, ms)
    if args.builder:
        for members in args.members:
            for topics in args.topics:
                for ratio in args.ratios:
                    ms, cold_ms = builder_case(members, ratio, topics)
                    report("builder", "homogeneous", "incremental", members, topics, ratio, ms)
                    print(f"{'':<9} (the builder's first run, its cache cold: {cold_ms:.1f} ms)")
    out = RESULTS.with_name("assignors_kafka_grid.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid only")
    parser.add_argument("--kafka-grid", action="store_true", help="Kafka's JMH grid")
    parser.add_argument("--members", type=int, nargs="*", default=list(KAFKA_MEMBERS))
    parser.add_argument("--topics", type=int, nargs="*", default=list(KAFKA_TOPICS))
    parser.add_argument("--ratios", type=int, nargs="*", default=list(KAFKA_RATIOS))
    parser.add_argument("--assignors", nargs="*", default=["uniform", "range"])
    parser.add_argument("--no-builder", dest="builder", action="store_false",
                        help="skip the TargetAssignmentBuilder cases")
    args = parser.parse_args()
    if args.kafka_grid:
        run_kafka_grid(args)
        return
    grid = QUICK_GRID if args.quick else FULL_GRID
    rows = []
    header = (
        f"{'assignor':8} {'subscriptions':13} {'members':>7} {'partitions':>10} "
        f"{'first_s':>8} {'stable_s':>8} {'leave_s':>8} {'moved':>6} {'leaver_had':>10}"
    )
    print(header)
    print("-" * len(header))
    for assignor in (UniformAssignor(), RangeAssignor()):
        for heterogeneous in (False, True):
            for num_members, num_partitions in grid:
                row = run_case(assignor, num_members, num_partitions, heterogeneous)
                rows.append(row)
                print(
                    f"{row['assignor']:8} {row['subscriptions']:13} {row['members']:>7} "
                    f"{row['partitions']:>10} {row['first_s']:>8.3f} {row['stable_s']:>8.3f} "
                    f"{row['leave_s']:>8.3f} {row['moved']:>6} {row['leaver_had']:>10}",
                    flush=True,
                )
    print_ratios(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"grid": "quick" if args.quick else "full", "rows": rows}, indent=2) + "\n"
    )
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
