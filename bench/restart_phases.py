"""Where a KIP-848 rolling restart's unowned partition-seconds go, restart by restart.

Used by ``bench/rolling_restart.py --explain``. A restart leaves partitions unowned twice:

* **leave**: the closing consumer revokes everything (timeline "revoked"), pays its revocation
  cost, sends its leave; the coordinator bumps the epoch ("member left the group" in its
  rebalance history) and hands the partitions to the survivors, who take them at their next
  heartbeat (or at once when woken). Split into: the leaver's revocation cost (the scenario's),
  its leave's way to the coordinator (revoked + cost -> bump), and the survivors' step
  (bump -> owned again);
* **join**: the replacement joins; survivors whose targets shrank revoke a partition each
  (timeline "revoked"), pay for it, acknowledge; the coordinator frees it and the
  replacement takes it at its next heartbeat (or at once when woken). Split into: the
  survivors' revocation cost, and the rest (acknowledgement, coordinator, joiner's heartbeat).

What is unowned in a restart's window and in neither list is reported as "other". Times are
``time.monotonic()`` in every process (the coordinator's history too: the clock is the
machine's), so they compare across actors.
"""

from __future__ import annotations

import statistics
from collections import defaultdict


def _first(events, pred):
    return next((e for e in events if pred(e)), None)


def explain(events: list[dict], restarts: list[dict], history: list[dict],
            cost_s: float) -> list[dict]:
    """One row per restart: partition-seconds per phase. ``restarts``: dicts with
    ``leaver`` (member id), ``joiner`` (member id or None), ``start``, ``end`` (seconds);
    ``history``: the group's rebalance rows (``time_ms``, ``reason``, ``member_id``)."""
    events = sorted(events, key=lambda e: e["t"])
    rows = []
    for r in restarts:
        window = [e for e in events if r["start"] <= e["t"] <= r["end"]]
        row = defaultdict(float)
        row["n"] = 1
        left = _first(window, lambda e, r=r: e["member_id"] == r["leaver"]
                      and e["event"] == "revoked")
        bump = _first(history, lambda h, r=r: h["reason"] == "member left the group"
                      and h["member_id"] == r["leaver"])
        if left is not None:
            t0, parts = left["t"], [tuple(tp) for tp in left["partitions"]]
            paid = t0 + len(parts) * cost_s
            bump_s = bump["time_ms"] / 1000 if bump is not None else paid
            for tp in parts:
                got = _first(window, lambda e, tp=tp, t0=t0: e["t"] >= t0
                             and e["event"] == "assigned" and tp in map(tuple, e["partitions"]))
                if got is None:
                    continue
                row["leave: revocation cost"] += min(paid, got["t"]) - t0
                row["leave: leave -> coordinator"] += max(0.0, min(bump_s, got["t"]) - paid)
                row["leave: coordinator -> new owner"] += max(0.0, got["t"] - max(bump_s, paid))
                row["leave partitions"] += 1
        for e in window:
            if e["event"] != "revoked" or e["member_id"] == r["leaver"]:
                continue
            parts = [tuple(tp) for tp in e["partitions"]]
            paid = e["t"] + len(parts) * cost_s
            for tp in parts:
                got = _first(window, lambda x, tp=tp, t=e["t"]: x["t"] >= t
                             and x["event"] == "assigned" and tp in map(tuple, x["partitions"]))
                if got is None:
                    continue
                row["join: revocation cost"] += min(paid, got["t"]) - e["t"]
                row["join: acknowledgement -> new owner"] += max(0.0, got["t"] - paid)
                row["join partitions"] += 1
        rows.append(dict(row))
    return rows


PHASES = ("leave: revocation cost", "leave: leave -> coordinator",
          "leave: coordinator -> new owner", "join: revocation cost",
          "join: acknowledgement -> new owner")


def report(rows: list[dict], unowned_per_restart: list[float]) -> list[str]:
    """Lines: each phase's total partition-seconds, share of the unowned total, and the
    median per restart; then what no phase explains."""
    total = sum(unowned_per_restart)
    lines = [f"{'KIP-848 phase (partition-s)':<40}{'total':>9}{'share':>8}{'median/restart':>16}"]
    explained = 0.0
    for phase in PHASES:
        values = [r.get(phase, 0.0) for r in rows]
        explained += sum(values)
        share = sum(values) / total if total else 0.0
        lines.append(f"{phase:<40}{sum(values):>9.2f}{share:>8.0%}"
                     f"{statistics.median(values) if values else 0.0:>16.3f}")
    lines.append(f"{'other (in no phase)':<40}{total - explained:>9.2f}"
                 f"{(total - explained) / total if total else 0.0:>8.0%}")
    moved = [r.get("leave partitions", 0) + r.get("join partitions", 0) for r in rows]
    median_moved = statistics.median(moved) if moved else 0
    lines.append(f"partitions moved per restart (median): {median_moved}")
    return lines
