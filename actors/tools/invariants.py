"""Checks of DESIGN.md's invariants 1-5 against what a run observed.

The chaos runner and the Ray tests collect client timelines, describes and assignments; these
pure functions (no Ray, no clock, no I/O) turn that evidence into a list of ``Violation``s, so
the same judgement applies to a unit test's hand-written history and to a 100k-event chaos
run. Every check is one pass plus a sort per partition: O(n log n) in the number of events.

Connect worker groups are checked by the same functions: a worker's timeline names
``connectors`` and ``tasks`` instead of ``partitions``, and ``connect_units`` turns them into
units ``(connector, -1)`` (Kafka Connect's sentinel for the connector itself) and
``(connector, task)``, which the ``check_connect_*`` functions hand to the partition checks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TopicPartition = tuple[str, int]
Event = Mapping[str, Any]

SUMMARY_MESSAGES_PER_INVARIANT = 5
# What the synthetic workloads add to timelines: a consumer's stream (``check_stream``), its
# commits (a real client's failed ones too, for diagnosis) and a Connect task's work
# (``check_connect_work``).
STREAM_EVENTS = ("processed", "committed", "commit_failed", "ran")
CONNECTOR_TASK = -1  # a Connect unit with this task id is the connector itself


@dataclass(frozen=True)
class Violation:
    """One broken invariant, numbered as in DESIGN.md, with a message a human can act on."""

    invariant: int
    message: str


@dataclass(frozen=True)
class Interval:
    """A member owned ``topic-partition`` of ``group_id`` during [start, end)."""

    group_id: str
    topic: str
    partition: int
    member_id: str
    start: float
    end: float
    # The member is a real Kafka client: it stops only when told (a callback), not at a
    # deadline of its own, and its coordinator protects offsets by refusing its commits.
    fenced_by_commits: bool = False


def _tp(raw: Sequence[Any]) -> TopicPartition:
    """Timelines may carry lists (msgpack, JSON) where tuples are meant; normalize once."""
    topic, partition = raw
    return (str(topic), int(partition))


def _name(group_id: str, tp: TopicPartition) -> str:
    return f"group {group_id} partition {tp[0]}-{tp[1]}"


def _span(iv: Interval) -> str:
    return f"{iv.member_id} [{iv.start:.3f}, {iv.end:.3f})"


def _walk(
    events: Iterable[Event], end_times: Mapping[str, float], default_end: float, name=_name
) -> tuple[list[Interval], list[Violation]]:
    """Replay each member's timeline in order: its intervals, and where its bookkeeping broke.

    A member's events are in time order, but members interleave, so open intervals are kept
    per (group, member). An interval still open when the timeline ends closes at the member's
    end time (never before its start: a late event then yields an empty interval).
    """
    open_since: dict[tuple[str, str], dict[TopicPartition, float]] = defaultdict(dict)
    intervals: list[Interval] = []
    broken: list[str] = []
    by_commits: set[tuple[str, str]] = set()
    for ev in events:
        group_id, member_id, t, kind = ev["group_id"], ev["member_id"], ev["t"], ev["event"]
        if ev.get("fencing") == "commit":
            by_commits.add((group_id, member_id))
        owned, at = open_since[(group_id, member_id)], f"at {t:.3f}"
        for tp in map(_tp, ev["partitions"]):
            if kind == "assigned":
                if tp in owned:
                    since = f"owning it since {owned[tp]:.3f}"
                    broken.append(
                        f"{name(group_id, tp)}: {member_id} assigned it again {at}, {since}"
                    )
                else:
                    owned[tp] = t
            elif kind in ("revoked", "lost"):
                start = owned.pop(tp, None)
                if start is not None:
                    intervals.append(Interval(group_id, tp[0], tp[1], member_id, start, t,
                                              (group_id, member_id) in by_commits))
                elif kind == "revoked":
                    # "lost" of an unowned partition is tolerated: a fenced client reports
                    # everything it may have held, including partitions still being assigned.
                    broken.append(
                        f"{name(group_id, tp)}: {member_id} revoked it {at} without owning it"
                    )
            elif kind not in STREAM_EVENTS:
                raise ValueError(f"unknown timeline event {kind!r} from {member_id}")
    for (group_id, member_id), owned in open_since.items():
        end = end_times.get(member_id, default_end)
        for tp, start in owned.items():
            intervals.append(Interval(group_id, tp[0], tp[1], member_id, start, max(start, end),
                                      (group_id, member_id) in by_commits))
    return intervals, [Violation(1, msg) for msg in broken]


def ownership_intervals(
    events: Iterable[Event], end_times: Mapping[str, float], default_end: float
) -> list[Interval]:
    """Who owned which partition when, as [start, end) intervals (see ``_walk``)."""
    return _walk(events, end_times, default_end)[0]


def check_exclusive_ownership(
    events: Iterable[Event], end_times: Mapping[str, float], default_end: float, name=_name
) -> list[Violation]:
    """Invariant 1: no two members own one partition of a group at the same time.

    Intervals of a partition are sorted by start and swept, remembering the interval that
    reaches furthest; each interval starting before that one ends (touching is a clean
    handover) is reported once, against it. Broken client bookkeeping is reported too.

    One overlap is Kafka's, not a violation: a real Kafka client (events marked
    ``"fencing": "commit"``) learns that it was fenced or outdated only from a reply or a
    callback, late on a starved machine, and Kafka keeps offsets safe by refusing its commits
    meanwhile. So an overlap is tolerated when one side is such a client and no commit of
    it on that partition was acknowledged inside the overlap; a commit acknowledged there
    means the coordinator took offsets from two owners at once, and is reported.
    """
    events = list(events)
    intervals, violations = _walk(events, end_times, default_end, name)
    acknowledged = _acknowledged_commits(events)
    by_partition: dict[tuple[str, str, int], list[Interval]] = defaultdict(list)
    for iv in intervals:
        by_partition[(iv.group_id, iv.topic, iv.partition)].append(iv)
    for (group_id, topic, partition), ivs in by_partition.items():
        ivs.sort(key=lambda iv: (iv.start, iv.end))
        holder = ivs[0]
        for iv in ivs[1:]:
            if iv.start < holder.end and iv.member_id != holder.member_id:
                overlap_end = min(holder.end, iv.end)
                if not _fenced_zombie(holder, iv, overlap_end, acknowledged):
                    both = f"owned by {_span(holder)} and by {_span(iv)}"
                    overlap = f"overlapping {overlap_end - iv.start:.3f} s"
                    msg = f"{name(group_id, (topic, partition))}: {both}, {overlap}"
                    violations.append(Violation(1, msg))
            if iv.end > holder.end:
                holder = iv
    return violations


def _acknowledged_commits(events: Iterable[Event]) -> dict[tuple, list[float]]:
    """(group, member, topic, partition) -> times its commits were acknowledged."""
    out: dict[tuple, list[float]] = defaultdict(list)
    for ev in events:
        if ev["event"] == "committed":
            for tp in map(_tp, ev["partitions"]):
                out[(ev["group_id"], ev["member_id"], *tp)].append(ev["t"])
    return out


def _fenced_zombie(a: Interval, b: Interval, until: float, acknowledged) -> bool:
    """One of the two is a real Kafka client none of whose commits on the partition was
    acknowledged in [b.start, until): its late ownership touched no offset."""
    for iv in (a, b):
        if iv.fenced_by_commits:
            times = acknowledged.get((iv.group_id, iv.member_id, iv.topic, iv.partition), ())
            if not any(b.start <= t < until for t in times):
                return True
    return False


def check_epochs(events: Iterable[Event], group_epochs: Mapping[str, int]) -> list[Violation]:
    """Invariant 2: a member's epoch never goes down nor exceeds its group's final epoch.

    Groups absent from ``group_epochs`` (not described at the end, e.g. deleted) are checked
    for monotonicity only.
    """
    last: dict[tuple[str, str], tuple[int, float]] = {}
    broken: list[str] = []
    for ev in events:
        if ev["event"] in STREAM_EVENTS:
            continue
        group_id, member_id, t, epoch = ev["group_id"], ev["member_id"], ev["t"], ev["epoch"]
        key = (group_id, member_id)
        if key in last and epoch < last[key][0]:
            prev_epoch, prev_t = last[key]
            went = f"from {prev_epoch} (at {prev_t:.3f}) to {epoch} (at {t:.3f})"
            broken.append(f"group {group_id}: {member_id} epoch went down {went}")
        last[key] = (epoch, t)
        group_epoch = group_epochs.get(group_id)
        if group_epoch is not None and epoch > group_epoch:
            above = f"above the group epoch {group_epoch}"
            broken.append(f"group {group_id}: {member_id} had epoch {epoch} at {t:.3f}, {above}")
    return [Violation(2, msg) for msg in broken]


def check_converged(
    assignments: Mapping[tuple[str, str], Iterable[Sequence[Any]]],
    expected: Mapping[str, Iterable[Sequence[Any]]],
    name=_name,
) -> list[Violation]:
    """Invariant 3: once settled, each expected partition has exactly one owner, no others.

    Only groups in ``expected`` are judged; ``assignments`` may hold members of other groups.
    """
    owners: dict[str, dict[TopicPartition, list[str]]] = defaultdict(lambda: defaultdict(list))
    for (group_id, member_id), partitions in assignments.items():
        for tp in map(_tp, partitions):
            owners[group_id][tp].append(member_id)
    violations: list[Violation] = []
    for group_id, partitions in expected.items():
        want = set(map(_tp, partitions))
        have = owners.get(group_id, {})
        for tp in sorted(want | set(have)):
            members = sorted(have.get(tp, []))
            if tp not in want:
                problem = f"owned by {', '.join(members)} but not subscribed"
            elif not members:
                problem = "owned by no member"
            elif len(members) > 1:
                problem = f"owned by {len(members)} members: {', '.join(members)}"
            else:
                continue
            violations.append(Violation(3, f"{name(group_id, tp)}: {problem}"))
    return violations


def _member_diff(group_id: str, member_id: str, ack: Mapping, new: Mapping) -> list[str]:
    diffs = []
    if new["member_epoch"] != ack["member_epoch"]:
        diffs.append(
            f"group {group_id} member {member_id}: member_epoch "
            f"{ack['member_epoch']} acknowledged, {new['member_epoch']} reloaded"
        )
    ack_tps, new_tps = set(map(_tp, ack["assigned"])), set(map(_tp, new["assigned"]))
    if ack_tps != new_tps:
        diffs.append(
            f"group {group_id} member {member_id}: assignment lost "
            f"{sorted(ack_tps - new_tps)}, gained {sorted(new_tps - ack_tps)}"
        )
    return diffs


def check_durable(
    acknowledged: Mapping[str, Mapping], reloaded: Mapping[str, Mapping]
) -> list[Violation]:
    """Invariant 4: a restarted partition serves exactly the state it had acknowledged.

    Clients are paused around the kill, so any difference, including a group or member
    that appears only after the reload, is state the log did not hold as acknowledged.
    """
    diffs: list[str] = []
    for group_id in sorted(set(acknowledged) | set(reloaded)):
        ack, new = acknowledged.get(group_id), reloaded.get(group_id)
        if new is None:
            diffs.append(f"group {group_id}: vanished after reload")
            continue
        if ack is None:
            diffs.append(f"group {group_id}: appeared after reload, never acknowledged")
            continue
        for field in ("group_epoch", "assignment_epoch"):
            if new[field] != ack[field]:
                how = "went back" if new[field] < ack[field] else "changed"
                diffs.append(
                    f"group {group_id}: {field} {how}: "
                    f"{ack[field]} acknowledged, {new[field]} reloaded"
                )
        ack_members, new_members = ack["members"], new["members"]
        for member_id in sorted(set(ack_members) | set(new_members)):
            if member_id not in new_members:
                diffs.append(f"group {group_id} member {member_id}: missing after reload")
            elif member_id not in ack_members:
                diffs.append(f"group {group_id} member {member_id}: appeared after reload")
            else:
                diffs += _member_diff(
                    group_id, member_id, ack_members[member_id], new_members[member_id]
                )
    return [Violation(4, d) for d in diffs]


def check_not_behind(before: Any, after: Any) -> list[Violation]:
    """Invariant 4 while clients keep running: a restart loses nothing it acknowledged.

    ``before`` and ``after`` are one group's ConsumerGroupDescribe entries, read just before a
    partition was killed and just after it reloaded. The group may have moved on meanwhile
    (members join, leave, get fenced), so only going backwards counts: a lower group epoch,
    or a member still present with a lower member epoch.
    """
    if before.error_code != 0:
        return []
    if after.error_code != 0:
        return [Violation(4, f"{before.group_id} unreadable after reload: {after.error_code}")]
    out = []
    if after.group_epoch < before.group_epoch:
        out.append(
            Violation(
                4,
                f"{before.group_id}: group epoch {before.group_epoch} -> "
                f"{after.group_epoch} across a partition restart",
            )
        )
    now = {mm.member_id: mm.member_epoch for mm in after.members}
    for mm in before.members:
        if mm.member_id in now and now[mm.member_id] < mm.member_epoch:
            out.append(
                Violation(
                    4,
                    f"{before.group_id}/{mm.member_id}: member epoch "
                    f"{mm.member_epoch} -> {now[mm.member_id]} after reload",
                )
            )
    return out


def check_all(
    events: Iterable[Event],
    end_times: Mapping[str, float],
    default_end: float,
    group_epochs: Mapping[str, int],
) -> list[Violation]:
    """Invariants 1 and 2 over one set of timelines, sorted by invariant."""
    events = list(events)  # walked twice; a generator would be empty the second time
    found = check_exclusive_ownership(events, end_times, default_end)
    found += check_epochs(events, group_epochs)
    return sorted(found, key=lambda v: v.invariant)


def summarize(violations: Sequence[Violation]) -> str:
    """A bounded report: counts per invariant and the first few messages of each."""
    if not violations:
        return "violations: 0"
    by_invariant: dict[int, list[str]] = defaultdict(list)
    for v in violations:
        by_invariant[v.invariant].append(v.message)
    lines = [f"violations: {len(violations)}"]
    for invariant in sorted(by_invariant):
        messages = by_invariant[invariant]
        lines.append(f"invariant {invariant}: {len(messages)}")
        lines += [f"  {msg}" for msg in messages[:SUMMARY_MESSAGES_PER_INVARIANT]]
        if len(messages) > SUMMARY_MESSAGES_PER_INVARIANT:
            lines.append(f"  ... and {len(messages) - SUMMARY_MESSAGES_PER_INVARIANT} more")
    return "\n".join(lines)


def unowned_seconds(
    intervals: Iterable[Interval], partitions: Iterable[TopicPartition], start: float, end: float
) -> float:
    """Partition-seconds in [start, end) during which nobody owned a partition: what a rolling
    restart costs in processing time (one pass and a sort per partition)."""
    by_partition: dict[TopicPartition, list[tuple[float, float]]] = defaultdict(list)
    for iv in intervals:
        lo, hi = max(iv.start, start), min(iv.end, end)
        if hi > lo:
            by_partition[(iv.topic, iv.partition)].append((lo, hi))
    total = 0.0
    for tp in partitions:
        covered, reach = 0.0, start
        for lo, hi in sorted(by_partition.get(tuple(tp), [])):
            if hi > reach:
                covered += hi - max(lo, reach)
                reach = hi
        total += (end - start) - covered
    return total


# -------------------------------------------------------------- Connect worker groups


def _unit_name(group_id: str, unit: TopicPartition) -> str:
    connector, task = unit
    what = f"connector {connector}" if task == CONNECTOR_TASK else f"task {connector}-{task}"
    return f"group {group_id} {what}"


def connect_units(work: Mapping[str, Any]) -> list[TopicPartition]:
    """A Connect event's or assignment's ``connectors`` and ``tasks`` as units."""
    return [(str(c), CONNECTOR_TASK) for c in work.get("connectors", ())] + [
        _tp(t) for t in work.get("tasks", ())
    ]


def _as_units(events: Iterable[Event]) -> list[Event]:
    return [
        dict(ev, partitions=connect_units(ev))
        for ev in events
        if ev["event"] in ("assigned", "revoked", "lost")
    ]


def check_connect_exclusive(
    events: Iterable[Event], end_times: Mapping[str, float], default_end: float
) -> list[Violation]:
    """Invariant 1 for Connect: no connector or task is owned by two workers at once."""
    return check_exclusive_ownership(_as_units(events), end_times, default_end, _unit_name)


def check_connect_converged(
    assignments: Mapping[tuple[str, str], Mapping[str, Any]],
    connectors: Mapping[str, Mapping[str, int]],
) -> list[Violation]:
    """Invariant 3 for Connect: once settled, each configured connector and task of each
    group in ``connectors`` (``{group: {connector: task_count}}``) runs on exactly one worker.
    ``assignments`` maps ``(group, worker)`` to ``{"connectors": [...], "tasks": [...]}``."""
    expected = {
        g: [(c, CONNECTOR_TASK) for c in cs] + [(c, t) for c, n in cs.items() for t in range(n)]
        for g, cs in connectors.items()
    }
    units = {key: connect_units(work) for key, work in assignments.items()}
    return check_converged(units, expected, _unit_name)


def check_connect_work(events: Iterable[Event]) -> list[Violation]:
    """Invariant 1 as the tasks themselves saw it: the ``ran`` ranges a unit's work was done
    in (``{"connector", "task", "from", "to", "member_id"}``) never overlap across workers."""
    by_unit: dict[tuple[str, TopicPartition], list[tuple[float, float, str]]] = defaultdict(list)
    for ev in events:
        if ev["event"] == "ran":
            unit = (str(ev["connector"]), int(ev["task"]))
            by_unit[(ev["group_id"], unit)].append((ev["from"], ev["to"], ev["member_id"]))
    violations = []
    for (group_id, unit), ranges in sorted(by_unit.items()):
        ranges.sort()
        reach, holder = -float("inf"), ""
        for lo, hi, member in ranges:
            if lo < reach and member != holder:
                msg = f"{_unit_name(group_id, unit)}: ran on {holder} and {member} at {lo:.3f}"
                violations.append(Violation(1, msg))
            if hi > reach:
                reach, holder = hi, member
    return violations
