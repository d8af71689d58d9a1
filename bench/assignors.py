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
    start = time.perf_counter()
    result = assignor.assign(spec)
    return result, time.perf_counter() - start


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid only")
    args = parser.parse_args()
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
