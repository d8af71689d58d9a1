"""Invariant 5, committed offsets: what the consumers processed and committed against what
the coordinator holds. Kept apart from ``invariants`` (ownership, epochs, convergence) because
these read the synthetic stream's ``processed`` and ``committed`` events and offset samples,
not who owned what."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from actors.tools.invariants import Event, Violation, _name, _tp


def check_stream(
    events: Iterable[Event], committed_now: Mapping[tuple[str, str, int], int]
) -> list[Violation]:
    """Invariant 5 for the synthetic stream: every partition's processed ranges, from offset 0,
    leave no gap (at-least-once: overlaps are re-processing, allowed), and what is committed
    now was processed by someone."""
    ranges: dict[tuple[str, str, int], list[tuple[int, int]]] = defaultdict(list)
    for ev in events:
        if ev["event"] == "processed":
            (tp,) = ev["partitions"]
            topic, partition = _tp(tp)
            ranges[(ev["group_id"], topic, partition)].append((ev["from"], ev["to"]))
    violations = []
    for key in sorted(set(ranges) | set(committed_now)):
        where = _name(key[0], (key[1], key[2]))
        reach = 0
        for lo, hi in sorted(ranges.get(key, [])):
            if lo > reach:
                gap = f"offsets {reach}..{lo} were never processed"
                violations.append(Violation(5, f"{where}: {gap} (a new owner skipped them)"))
            reach = max(reach, hi)
        committed = committed_now.get(key, -1)
        if committed > reach:
            msg = f"{where}: committed {committed} but processing only reached {reach}"
            violations.append(Violation(5, msg))
    return violations


def check_offsets_monotonic(
    samples: Sequence[Mapping[tuple[str, str, int], int]],
) -> list[Violation]:
    """Invariant 5: committed offsets, read again and again in time order, never go back
    and never vanish (nothing here resets or deletes them)."""
    violations = []
    last: dict[tuple[str, str, int], int] = {}
    for i, sample in enumerate(samples):
        for key, offset in last.items():
            now = sample.get(key)
            where = _name(key[0], (key[1], key[2]))
            if now is None:
                violations.append(Violation(5, f"{where}: offset {offset} vanished at read {i}"))
            elif now < offset:
                msg = f"{where}: offset went back from {offset} to {now} at read {i}"
                violations.append(Violation(5, msg))
        last = {**last, **sample}
    return violations


def check_acknowledged_commits(
    events: Iterable[Event], committed_now: Mapping[tuple[str, str, int], int]
) -> list[Violation]:
    """Invariant 5 from the consumers' side: every commit a consumer saw acknowledged (its
    timeline's ``committed`` events) is still covered by what the coordinator holds now. A
    commit lost across a partition restart shows up here even if no read happened to see it."""
    # Per partition, the highest acknowledged commit and the event that acknowledged it (whom
    # and when: what a hunt for the cause starts from).
    acknowledged: dict[tuple[str, str, int], Event] = {}
    for ev in events:
        if ev["event"] == "committed":
            (tp,) = ev["partitions"]
            topic, partition = _tp(tp)
            key = (ev["group_id"], topic, partition)
            if key not in acknowledged or ev["offset"] > acknowledged[key]["offset"]:
                acknowledged[key] = ev
    violations = []
    for key, ev in sorted(acknowledged.items()):
        offset, now = ev["offset"], committed_now.get(key)
        if now is None or now < offset:
            where = _name(key[0], (key[1], key[2]))
            held = "nothing" if now is None else f"{now}"
            msg = (f"{where}: commit of {offset} was acknowledged, the coordinator holds {held}"
                   f" (acknowledged to {ev['member_id']} at {ev['t']:.3f})")
            violations.append(Violation(5, f"acknowledged commit lost: {msg}"))
    return violations
