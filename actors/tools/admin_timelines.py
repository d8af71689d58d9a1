"""``cohort timeline``: what it draws, read from consumers' timeline files and the coordinator.

Ownership over time has two sources: the JSON-lines files client actors append their
timelines to (``actors/clients/timeline.py``), which survive the actors, and the rebalance
history the coordinator keeps per group (KIP-800 causes). This module reads both into plain
events for ``actors/tools/timeline_plot.py``, with a bound on how much of a file it reads.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from actors.tools.admin import AdminError, Columns, missing_group, raise_for
from protocol import messages as m
from protocol.errors import Errors

TIMELINE_COLUMNS: Columns = [
    ("OUT", "out"), ("MEMBERS", "members"), ("PARTITIONS", "partitions"),
    ("OWNERSHIPS", "ownerships"), ("REBALANCES", "rebalances"),
]

# A consumer's timeline file holds at most this many events that we read (a bound on memory).
MAX_TIMELINE_EVENTS = 1_000_000


def load_timelines(directory: str | Path, group_id: str | None = None) -> dict[str, list[dict]]:
    """The JSON-lines files ``ConsumerClient(timeline_path=...)`` appends to, one per consumer
    (named by its file), keeping the events of ``group_id``; ordered by time."""
    root = Path(directory)
    if not root.is_dir():
        raise AdminError(f"Timeline directory '{directory}' does not exist.")
    out: dict[str, list[dict]] = {}
    for path in sorted(p for p in root.iterdir() if p.suffix in (".jsonl", ".json")):
        events = []
        with path.open() as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if len(events) >= MAX_TIMELINE_EVENTS:
                    break
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as err:
                    raise AdminError(f"{path}:{n}: not a JSON line ({err.msg}).") from None
                if group_id is None or e.get("group_id", group_id) == group_id:
                    e["partitions"] = [tuple(tp) for tp in e.get("partitions", [])]
                    events.append(e)
        if events:
            out[path.stem] = sorted(events, key=lambda e: e.get("t", 0))
    if not out:
        which = f" for group '{group_id}'" if group_id else ""
        raise AdminError(f"No timeline events{which} in '{directory}'.")
    return out


def rebalance_history(cluster, group_id: str) -> list[dict]:
    """Why the group rebalanced, as DescribeGroups reports it (KIP-800 causes: classic groups
    and classic members of a consumer group; ``time_ms`` on the coordinator's clock)."""
    d = cluster.call(m.DescribeGroupsRequest(groups=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return [dataclasses.asdict(c) for c in d.rebalance_history]
