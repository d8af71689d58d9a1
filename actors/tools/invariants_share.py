"""Invariant 7 (DESIGN.md), share groups, checked on the share consumers' timelines.

Each share consumer (``actors/clients/share_consumer.py``) records what it ``acquired`` (a
range of offsets of one partition, with the delivery count the coordinator gave) and what the
coordinator confirmed it ``acknowledged`` (ranges, with the type). From those, and the
share-partitions' start offsets read at the end (DescribeShareGroupOffsets):

a. a record whose acknowledgement was confirmed is never acquired again afterwards;
b. while a record is acquired no other consumer gets it: every acquisition of a record is a
   new delivery, so its delivery counts strictly increase in time (two holders at once would
   share one delivery);
c. a record is delivered at most ``share.delivery.count.limit`` times;
d. none is skipped or lost: every offset from the first one acquired up to the start offset
   was acquired, and was acknowledged, or archived at the limit, or its acknowledgement was
   sent in a request whose reply was lost (a partition killed holding it may have applied it
   durably: ``acknowledging`` events), or it was last held by a consumer that was killed (its
   acknowledgement may have applied without its timeline saying so).

Pure functions over plain events: tests feed them hand-made histories.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from actors.tools.invariants import Violation

SHARE_INVARIANT = 7
MAX_REPORTED = 20

Record = tuple[str, int, int]  # (topic id, partition, offset)


def _acquisitions(events: Iterable[dict]) -> dict[Record, list[tuple[float, int, str]]]:
    out: dict[Record, list[tuple[float, int, str]]] = {}
    for e in events:
        if e["event"] != "acquired":
            continue
        for o in range(e["first_offset"], e["last_offset"] + 1):
            out.setdefault((e["topic_id"], e["partition"], o), []).append(
                (e["t"], e["delivery_count"], e["member_id"]))
    for v in out.values():
        v.sort()
    return out


def _acknowledged(events: Iterable[dict], kind: str = "acknowledged") -> dict[Record, float]:
    """Each record's first confirmed acknowledgement time (``kind="acknowledging"``: the first
    time an acknowledgement of it was sent, confirmed or not)."""
    out: dict[Record, float] = {}
    for e in events:
        if e["event"] != kind:
            continue
        for first, last, _ in e["ranges"]:
            for o in range(first, last + 1):
                key = (e["topic_id"], e["partition"], o)
                out[key] = min(out.get(key, e["t"]), e["t"])
    return out


def check_share(events: list[dict], start_offsets: dict[tuple[str, int], int],
                delivery_limit: int, killed: set[str]) -> list[Violation]:
    """Invariants 7a-7d (module docstring) over one share group's consumers' events."""
    found: list[str] = []
    acquired = _acquisitions(events)
    acked = _acknowledged(events)
    sent = _acknowledged(events, "acknowledging")
    for rec, history in acquired.items():
        at = acked.get(rec)
        if at is not None and any(t > at for t, _, _ in history):
            found.append(f"7a: {rec} acquired again after its acknowledgement at {at:.3f}")
        counts = [n for _, n, _ in history]
        if any(b <= a for a, b in pairwise(counts)):
            found.append(f"7b: {rec} acquired with delivery counts {counts} by "
                         f"{[m for _, _, m in history]}: two holders of one delivery")
        if max(counts) > delivery_limit:
            found.append(f"7c: {rec} delivered {max(counts)} times (limit {delivery_limit})")
    firsts: dict[tuple[str, int], int] = {}
    for t, p, o in acquired:
        firsts[(t, p)] = min(firsts.get((t, p), o), o)
    for tp, first in sorted(firsts.items()):
        for o in range(first, start_offsets.get(tp, first)):
            rec = (tp[0], tp[1], o)
            history = acquired.get(rec)
            if history is None:
                found.append(f"7d: {rec} below the start offset was never delivered (skipped)")
            elif (rec not in acked and rec not in sent
                  and max(n for _, n, _ in history) < delivery_limit
                  and history[-1][2] not in killed):
                found.append(f"7d: {rec} below the start offset was neither acknowledged nor "
                             f"archived (lost)")
    return [Violation(SHARE_INVARIANT, msg) for msg in found[:MAX_REPORTED]] + (
        [Violation(SHARE_INVARIANT, f"... and {len(found) - MAX_REPORTED} more")]
        if len(found) > MAX_REPORTED else [])
