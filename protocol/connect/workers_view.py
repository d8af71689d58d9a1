"""A Connect cluster's workers and what each runs, as ``cohort connectors --describe`` and
``cohort groups --describe`` show them (the Connect and classic rows' admin detail).

Per worker of the Connect group (``group.id`` of the Connect cluster): its epoch, its state and
the connectors and tasks it runs, read with ConnectGroupDescribe for a group of the new
protocol and with DescribeGroups (the workers' classic Connect protocol bytes, decoded) for a
classic Connect group. Work configured but run by no worker (held for a departed worker, or
not yet handed out) is named apart. Pure: the requests go through an ``AdminPort``, refusals
are ``CoordinatorError``s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from protocol import messages as m
from protocol.admin_view import AdminPort, Columns, DetailTable, Row, raise_refusal, refuse_for
from protocol.classic.connect_protocol import PROTOCOL_TYPE, ConnectProtocolError, owned_work
from protocol.connect.group import GROUP_TYPE
from protocol.errors import Errors
from protocol.group_states import kafka_state_name

WORKERS_COLUMNS: Columns = [
    ("GROUP", "group"), ("WORKER-ID", "worker_id"), ("INSTANCE-ID", "instance_id"),
    ("EPOCH", "epoch"), ("STATE", "state"), ("#CONNECTORS", "connector_count"),
    ("#TASKS", "task_count"), ("CONNECTORS", "connectors_text"), ("TASKS", "tasks_text"),
]

Task = tuple[str, int]


def is_connect_group(listed: m.ListedGroup) -> bool:
    """A group of the new Connect protocol, or a classic group of Connect workers."""
    return listed.group_type == GROUP_TYPE or listed.protocol_type == PROTOCOL_TYPE


def workers_detail(port: AdminPort, listed: m.ListedGroup, now_ms: int) -> DetailTable | None:
    """The workers table in place of a Connect group's offsets or members (None: the group
    runs no Connect workers). Its configured connectors are the coordinator's image's."""
    if not is_connect_group(listed):
        return None
    gid = listed.group_id
    configured = port.query(gid, _ConnectorsOf(gid))
    described = describe_workers(port, gid, listed, configured)
    return DetailTable(WORKERS_COLUMNS, worker_rows(described), describe_notes(described))


class _ConnectorsOf:
    """``shard -> {connector: task count}`` of one Connect group (picklable: a query)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def __call__(self, shard: Any) -> dict[str, int]:
        return shard.image.connectors_of(self.group_id)


def describe_workers(port: AdminPort, group_id: str, listed: m.ListedGroup | None,
                     configured: dict[str, int], connector: str | None = None) -> dict:
    """The group, its configured connectors, each worker's share and what no worker runs.

    ``listed`` None: a group with configured connectors but no worker yet, described as empty.
    ``connector`` narrows every list to that connector's work. A group that is not a Connect
    group is refused (GROUP_ID_NOT_FOUND).
    """
    if listed is None:
        head = {"type": GROUP_TYPE, "state": "empty", "group_epoch": -1, "assignment_epoch": -1,
                "assignor": None}
        workers: list[Row] = []
    elif listed.group_type == GROUP_TYPE:
        head, workers = _described_connect(port, group_id)
    elif listed.protocol_type == PROTOCOL_TYPE:
        head, workers = _described_classic(port, group_id, listed.group_type)
    else:
        raise_refusal(Errors.GROUP_ID_NOT_FOUND,
                      f"Group '{group_id}' is a {listed.group_type} group, not a Connect group.")
    keep = (lambda c: c == connector) if connector is not None else (lambda _c: True)
    running: set[Task] = set()
    for w in workers:
        w["connectors"] = sorted(c for c in w["connectors"] if keep(c))
        w["tasks"] = sorted(t for t in w["tasks"] if keep(t[0]))
        running |= {(c, -1) for c in w["connectors"]} | set(w["tasks"])
    wanted = {c: n for c, n in configured.items() if keep(c)}
    unassigned = {
        "connectors": sorted(c for c in wanted if (c, -1) not in running),
        "tasks": sorted((c, t) for c, n in wanted.items() for t in range(n)
                        if (c, t) not in running),
    }
    return {"group": group_id, **head, "connectors": wanted, "workers": workers,
            "unassigned": unassigned}


def _missing(group_id: str) -> None:
    raise_refusal(Errors.GROUP_ID_NOT_FOUND, f"Connect group '{group_id}' does not exist.")


def _described_connect(port: AdminPort, group_id: str) -> tuple[dict, list[Row]]:
    d = port.call(m.ConnectGroupDescribeRequest(group_ids=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        _missing(group_id)
    refuse_for(d.error_code, d.error_message, f"Describe of Connect group '{group_id}' failed")
    head = {"type": GROUP_TYPE, "state": d.group_state, "group_epoch": d.group_epoch,
            "assignment_epoch": d.assignment_epoch, "assignor": d.assignor_name}
    workers = [
        {
            "worker_id": w.member_id, "instance_id": w.instance_id, "epoch": w.member_epoch,
            "state": w.member_state,
            "connectors": list(w.assignment.connectors),
            "tasks": [(t.connector, t.task) for t in w.assignment.tasks],
            "pending_tasks": len(w.pending_connectors_and_tasks.tasks),
        }
        for w in d.members
    ]
    return head, workers


def _described_classic(port: AdminPort, group_id: str,
                       group_type: str) -> tuple[dict, list[Row]]:
    """A classic Connect group: each worker's work decoded from its Connect protocol bytes
    (its JoinGroup allocation and its SyncGroup assignment, as Kafka's workers read them)."""
    d = port.call(m.DescribeGroupsRequest(groups=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND or d.group_state == "dead":
        _missing(group_id)
    refuse_for(d.error_code, d.error_message, f"Describe of Connect group '{group_id}' failed")
    head = {"type": group_type, "state": d.group_state, "group_epoch": d.generation_id,
            "assignment_epoch": None, "assignor": d.protocol_data or None}
    workers = []
    for w in d.members:
        try:
            work = owned_work(w.member_metadata, w.member_assignment or None)
        except ConnectProtocolError:
            work = None
        workers.append({
            "worker_id": w.member_id, "instance_id": w.group_instance_id,
            "epoch": d.generation_id, "state": "leader" if w.member_id == d.leader else "",
            "connectors": sorted(work.connectors) if work else [],
            "tasks": sorted(work.tasks) if work else [], "pending_tasks": None,
        })
    return head, workers


def worker_rows(described: dict) -> list[Row]:
    """One table row per worker: counts, and its connectors and tasks as text."""
    return [
        {**w, "group": described["group"], "connector_count": len(w["connectors"]),
         "task_count": len(w["tasks"]), "connectors_text": ",".join(w["connectors"]),
         "tasks_text": tasks_text(w["tasks"])}
        for w in described["workers"]
    ]


def describe_notes(described: dict) -> list[str]:
    """The lines above the table: the group's state, then what no worker runs."""
    d = described
    epochs = f"group epoch {d['group_epoch']}"
    if d["assignment_epoch"] is not None and d["assignment_epoch"] >= 0:
        epochs += f", assignment epoch {d['assignment_epoch']}"
    total = sum(d["connectors"].values())
    state = kafka_state_name(d["state"])
    notes = [f"Connect group '{d['group']}' ({d['type']}): {state}, {epochs}, "
             f"{len(d['workers'])} workers, {len(d['connectors'])} connectors, {total} tasks."]
    if not d["workers"]:
        notes.append(f"Connect group '{d['group']}' has no active workers.")
    un = d["unassigned"]
    if un["connectors"] or un["tasks"]:
        notes.append(f"Not running on any worker: connectors {','.join(un['connectors']) or '-'}"
                     f"; tasks {tasks_text(un['tasks']) or '-'}")
    return notes


def tasks_text(tasks: Iterable[Task]) -> str:
    """``sink:0,1;source:2``, as ``cohort groups --members --verbose`` prints partitions."""
    by_connector: dict[str, list[int]] = {}
    for c, t in tasks:
        by_connector.setdefault(c, []).append(t)
    return ";".join(f"{c}:{','.join(map(str, sorted(ts)))}"
                    for c, ts in sorted(by_connector.items()))
