"""Benchmark the incremental cooperative connect assignor at Connect-cluster scale.

Run: ``python bench/connect_assignor.py [--workers 1000 --connectors 2000 --tasks 50]``
(``--quick`` for 100 x 200 x 50). A group of static workers (instance ids) runs every
connector's tasks; each scenario times one assignor round (``plan``, the whole
``assign``: decoding the carried state, the balance, encoding every member's metadata)
and reports what moved:

* ``first``: the first assignment, nothing owned, no metadata;
* ``rerun``: the same group again (what a round triggered by echoed metadata costs);
* ``leave+join``: one worker leaves and a new one joins, Kafka's default delay (300 s):
  the leaver's work is held, nothing moves;
* ``expiry``: the delay is over: the held work goes to the newcomer;
* ``leave+join, delay 0``: the same change with the delay off: reassigned at once;
* ``static bounce``: a worker leaves and returns under a new member id, same instance id,
  within the delay: it reclaims its work in the round it returns;
* ``join``: one worker joins a settled group: it takes its share from the others (the
  load-balancing revocations; ``moved`` is the newcomer's share, nothing else moves).

Each figure is the median of ``--repeat`` runs of that round on the same input. Prints a
table and writes the figures to ``bench/results/connect_assignor.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignors.client.interfaces import ConnectGroup, ConnectGroupMember
from assignors.connect import IncrementalCooperativeAssignor
from assignors.connect.plan import ConnectRound

RESULTS = Path(__file__).resolve().parent / "results" / "connect_assignor.json"
DELAY_MS = 300_000


class Group:
    """Members' targets and metadata as the coordinator keeps them between rounds."""

    def __init__(self, connectors: dict[str, int]) -> None:
        self.connectors = connectors
        self.members: dict[str, ConnectGroupMember] = {}

    def join(self, member_id: str, instance_id: str) -> None:
        self.members[member_id] = ConnectGroupMember(
            member_id, instance_id, version=2, maximum_version=2
        )

    def leave(self, member_id: str) -> ConnectGroupMember:
        return self.members.pop(member_id)

    def at(self, now_ms: int) -> ConnectGroup:
        return ConnectGroup(
            members=tuple(self.members.values()), connectors=self.connectors, now_ms=now_ms
        )

    def install(self, result: ConnectRound) -> None:
        for m in result.members:
            old = self.members[m.member_id]
            self.members[m.member_id] = ConnectGroupMember(
                m.member_id,
                old.instance_id,
                version=m.version,
                metadata=m.metadata,
                maximum_version=old.maximum_version,
                owned_connectors=m.connectors,
                owned_tasks=m.tasks,
            )


def timed_round(
    assignor: IncrementalCooperativeAssignor, group: Group, now_ms: int, repeat: int
) -> tuple[ConnectRound, float]:
    """Median seconds of ``repeat`` rounds on the same input; installs the last result."""
    seconds = []
    for _ in range(repeat):
        snapshot = group.at(now_ms)
        start = time.perf_counter()
        result = assignor.plan(snapshot)
        seconds.append(time.perf_counter() - start)
    group.install(result)
    return result, statistics.median(seconds)


def row(name: str, result: ConnectRound, seconds: float) -> dict[str, object]:
    carriers = [m for m in result.members if len(m.metadata) > 9]
    return {
        "scenario": name,
        "seconds": round(seconds, 4),
        "moved": result.moved_units,
        "held": sum(len(h.connectors) + len(h.tasks) for h in result.held),
        "reclaimed": result.reclaimed_units,
        "released": result.released_units,
        "state_bytes": max((len(m.metadata) for m in carriers), default=0),
    }


def run(workers: int, connectors: int, tasks: int, repeat: int) -> list[dict[str, object]]:
    config = {f"connector-{c:05d}": tasks for c in range(connectors)}
    rows = []

    def fresh() -> Group:
        group = Group(config)
        for w in range(workers):
            group.join(f"worker-{w:05d}", f"host-{w:05d}")
        return group

    held = IncrementalCooperativeAssignor(DELAY_MS)
    group = fresh()
    rows.append(row("first", *timed_round(held, group, 0, repeat)))
    rows.append(row("rerun", *timed_round(held, group, 0, repeat)))
    group.leave("worker-00007")
    group.join("worker-new", "host-new")
    rows.append(row("leave+join", *timed_round(held, group, 60_000, repeat)))
    rows.append(row("expiry", *timed_round(held, group, 60_000 + DELAY_MS, repeat)))

    at_once = IncrementalCooperativeAssignor(0)
    group = fresh()
    timed_round(at_once, group, 0, 1)
    group.leave("worker-00007")
    group.join("worker-new", "host-new")
    rows.append(row("leave+join, delay 0", *timed_round(at_once, group, 60_000, repeat)))

    group = fresh()
    timed_round(held, group, 0, 1)
    gone = group.leave("worker-00007")
    timed_round(held, group, 60_000, 1)
    group.join("worker-00007-restarted", gone.instance_id or "")
    rows.append(row("static bounce", *timed_round(held, group, 90_000, repeat)))

    group = fresh()
    timed_round(held, group, 0, 1)
    group.join("worker-new", "host-new")
    rows.append(row("join", *timed_round(held, group, 60_000, repeat)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1_000)
    parser.add_argument("--connectors", type=int, default=2_000)
    parser.add_argument("--tasks", type=int, default=50, help="tasks per connector")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100 workers x 200 connectors")
    args = parser.parse_args()
    if args.quick:
        args.workers, args.connectors = 100, 200
    total = args.connectors * args.tasks
    print(
        f"{args.workers} workers, {args.connectors} connectors x {args.tasks} tasks "
        f"= {total} tasks, median of {args.repeat}"
    )
    header = (
        f"{'scenario':22} {'seconds':>8} {'moved':>6} {'held':>5} {'reclaimed':>9} "
        f"{'released':>8} {'state_bytes':>11}"
    )
    print(header)
    print("-" * len(header))
    rows = run(args.workers, args.connectors, args.tasks, args.repeat)
    for r in rows:
        print(
            f"{r['scenario']:22} {r['seconds']:>8.3f} {r['moved']:>6} {r['held']:>5} "
            f"{r['reclaimed']:>9} {r['released']:>8} {r['state_bytes']:>11}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "workers": args.workers,
                "connectors": args.connectors,
                "tasks_per_connector": args.tasks,
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
