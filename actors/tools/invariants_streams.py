"""Invariant 8 (DESIGN.md), streams groups, checked on the streams members' timelines.

Each streams member (``actors/clients/streams_member.py``, its pure half
``protocol/client/streams_member.py``) appends a snapshot whenever what it owns changes: the
time, its member epoch, its active, standby and warm-up tasks, and why. It records giving a
task up (revoked, lost, left) before its next heartbeat tells the coordinator, and taking one
only after the reply that granted it, so with one clock for every member of a run:

a. no task is active on two members at once: the [start, end) intervals in which members held
   a task active never overlap (a killed member's open intervals end when it was seen dead);
b. a member never holds one task both active and as a standby or warm-up;
c. a member's epoch never goes down, except to 0 when it rejoins;
d. at the end, once the group settled, every task of the topology is active on exactly one live
   member, and no standby of a task sits on the process (``process_id``) holding it active.

Pure functions over plain events: tests feed them hand-made histories.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from actors.tools.invariants import Violation

STREAMS_INVARIANT = 8
MAX_REPORTED = 20

Task = tuple[str, int]  # (subtopology id, partition)


@dataclass(frozen=True)
class TaskInterval:
    """``member_id`` held ``task`` active during [start, end)."""

    task: Task
    member_id: str
    start: float
    end: float


def _tasks(raw: Iterable) -> set[Task]:
    """JSON gives lists where tuples are meant; normalize once."""
    return {(str(s), int(p)) for s, p in raw}


def _by_member(events: Iterable[dict]) -> dict[str, list[dict]]:
    """Each member's events in the order it recorded them (a timeline file is in that order;
    events of one member never interleave out of order)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        out[e["member_id"]].append(e)
    return out


def active_intervals(events: Iterable[dict], ends: Mapping[str, float]
                     ) -> tuple[list[TaskInterval], list[str]]:
    """Who held which task active when, and what broke in each member's own bookkeeping
    (invariants b and c). An interval still open at the end of a member's timeline closes at
    ``ends[member]`` (the time it was seen dead) or never (a live member)."""
    intervals: list[TaskInterval] = []
    broken: list[str] = []
    for mid, mine in _by_member(events).items():
        since: dict[Task, float] = {}
        epoch = 0
        for e in mine:
            t, active = e["t"], _tasks(e["active"])
            both = active & (_tasks(e["standby"]) | _tasks(e["warmup"]))
            if both:
                broken.append(f"8b: {mid} holds {sorted(both)} both active and standby/warm-up "
                              f"at {t:.3f}")
            if 0 < e["epoch"] < epoch:
                broken.append(f"8c: {mid}'s epoch went down from {epoch} to {e['epoch']} at "
                              f"{t:.3f}")
            epoch = max(e["epoch"], 0)
            for task in sorted(set(since) - active):
                start = since.pop(task)
                intervals.append(TaskInterval(task, mid, start, max(start, t)))
            for task in sorted(active - set(since)):
                since[task] = t
        end = ends.get(mid, math.inf)
        for task, start in since.items():
            intervals.append(TaskInterval(task, mid, start, max(start, end)))
    return intervals, broken


def overlaps(intervals: Iterable[TaskInterval]) -> list[str]:
    """Invariant 8a: every pair of intervals of one task, of two members, that overlap."""
    by_task: dict[Task, list[TaskInterval]] = defaultdict(list)
    for iv in intervals:
        if iv.end > iv.start:
            by_task[iv.task].append(iv)
    found = []
    for task, ivs in sorted(by_task.items()):
        ivs.sort(key=lambda iv: (iv.start, iv.end))
        held: list[TaskInterval] = []  # intervals that may still be open at the next start
        for iv in ivs:
            held = [h for h in held if h.end > iv.start]
            for h in held:
                if h.member_id != iv.member_id:
                    found.append(
                        f"8a: task {task[0]}_{task[1]} active on {h.member_id} "
                        f"[{h.start:.3f}, {_t(h.end)}) and on {iv.member_id} "
                        f"[{iv.start:.3f}, {_t(iv.end)}) at once")
            held.append(iv)
    return found


def _t(x: float) -> str:
    return "end" if math.isinf(x) else f"{x:.3f}"


def check_final(last: Mapping[str, dict], tasks: Iterable[Task]) -> list[str]:
    """Invariant 8d over each live member's last snapshot (member id -> event)."""
    found = []
    owners: dict[Task, list[str]] = defaultdict(list)
    for mid, e in last.items():
        for task in _tasks(e["active"]):
            owners[task].append(mid)
    expected = set(tasks)
    for task in sorted(expected | set(owners)):
        who = sorted(owners.get(task, []))
        if task not in expected:
            found.append(f"8d: task {task[0]}_{task[1]} is not in the topology but active on "
                         f"{who}")
        elif len(who) != 1:
            found.append(f"8d: task {task[0]}_{task[1]} ends active on {len(who)} live "
                         f"members {who}, not exactly one")
    for mid, e in sorted(last.items()):
        for task in sorted(_tasks(e["standby"])):
            owner_processes = {last[o]["process_id"] for o in owners.get(task, [])}
            if e["process_id"] in owner_processes:
                found.append(f"8d: standby of task {task[0]}_{task[1]} on {mid} sits on "
                             f"process {e['process_id']}, which holds it active")
    return found


def check_streams(events: list[dict], ends: Mapping[str, float], live: Iterable[str],
                  tasks: Iterable[Task]) -> list[Violation]:
    """Invariants 8a-8d (module docstring) over one streams group's members' events.

    ``ends``: member id -> when it was seen dead (killed members); ``live``: the members still
    running at the end, whose last snapshots must cover ``tasks`` (the topology's)."""
    intervals, found = active_intervals(events, ends)
    found += overlaps(intervals)
    mine = _by_member(events)
    last = {mid: mine[mid][-1] if mine.get(mid) else
            {"active": [], "standby": [], "warmup": [], "process_id": None}
            for mid in live}
    found += check_final(last, tasks)
    return [Violation(STREAMS_INVARIANT, msg) for msg in found[:MAX_REPORTED]] + (
        [Violation(STREAMS_INVARIANT, f"... and {len(found) - MAX_REPORTED} more")]
        if len(found) > MAX_REPORTED else [])
