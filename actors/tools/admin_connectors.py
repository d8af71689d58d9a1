"""``cohort connectors``: a Connect cluster's connectors and which worker runs what.

Kafka Connect keeps its connectors in a config topic and shows them through its REST API
(``POST /connectors``, ``PUT /connectors/{name}/config``, ``GET /connectors/{name}/status``);
Cohort keeps them in the controller (the config topic's stand-in, seed 004) and the command
speaks to it: create, alter (a new task count: Connect's ``tasks.max``), delete, list. The
describe view is the coordinator's: per worker of the Connect group (``group.id`` of the
Connect cluster), its epoch, its state and the connectors and tasks it runs, read with
ConnectGroupDescribe for a group of the new protocol and with DescribeGroups (the workers'
classic Connect protocol bytes, decoded) for a classic Connect group. Work configured but run
by no worker (held for a departed worker, or not yet handed out) is named apart.

Refusals carry the controller's Kafka error: DUPLICATE_RESOURCE (name taken),
RESOURCE_NOT_FOUND (no such connector), INVALID_CONFIG (a task count outside 1..1,000,000),
INVALID_REQUEST (a bad name), GROUP_ID_NOT_FOUND (no such Connect group to describe).
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.tools.admin import AdminError, Columns, Row, raise_for
from actors.tools.admin_groups import listed_group
from protocol import messages as m
from protocol.classic.connect_protocol import PROTOCOL_TYPE, ConnectProtocolError, owned_work
from protocol.errors import CoordinatorError, Errors
from protocol.group_states import kafka_state_name

# The controller's bound on a connector's task count (checked here before any connect too).
MAX_TASKS = 1_000_000

LIST_COLUMNS: Columns = [("GROUP", "group"), ("CONNECTOR", "connector"), ("TASKS", "tasks")]
WORKERS_COLUMNS: Columns = [
    ("GROUP", "group"), ("WORKER-ID", "worker_id"), ("INSTANCE-ID", "instance_id"),
    ("EPOCH", "epoch"), ("STATE", "state"), ("#CONNECTORS", "connector_count"),
    ("#TASKS", "task_count"), ("CONNECTORS", "connectors_text"), ("TASKS", "tasks_text"),
]

Task = tuple[str, int]


def check_tasks(tasks: int | None) -> None:
    """The task count's bounds, as the controller checks them, before anything is sent."""
    if tasks is not None and not 0 < tasks <= MAX_TASKS:
        raise AdminError(f"tasks.max must be in 1..{MAX_TASKS}, got {tasks}.",
                         Errors.INVALID_CONFIG)


def _controller(call, *args) -> object:
    """A controller call; its refusal becomes the CLI's refusal with the same Kafka error."""
    try:
        return call(*args)
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None


def create_connector(cluster, group_id: str, name: str, tasks: int) -> None:
    check_tasks(tasks)
    _controller(cluster.create_connector, group_id, name, tasks)


def alter_connector(cluster, group_id: str, name: str, tasks: int) -> None:
    check_tasks(tasks)
    _controller(cluster.alter_connector, group_id, name, tasks)


def delete_connector(cluster, group_id: str, name: str) -> None:
    _controller(cluster.delete_connector, group_id, name)


def list_connectors(cluster, group_id: str) -> list[Row]:
    got = _controller(cluster.list_connectors, group_id)
    return [{"group": group_id, "connector": c, "tasks": n} for c, n in got.items()]


# --------------------------------------------------------------------------- describe


def describe(cluster, group_id: str, connector: str | None = None) -> dict:
    """The group, its configured connectors, each worker's share and what no worker runs.

    ``connector`` narrows every list to that connector's work. A group with configured
    connectors but no worker yet is described as empty; a group with neither is unknown
    (GROUP_ID_NOT_FOUND), as is a group that is not a Connect group.
    """
    configured = _controller(cluster.list_connectors, group_id)
    if connector is not None and connector not in configured:
        raise AdminError(f"Connector {connector!r} does not exist in Connect group {group_id}.",
                         Errors.RESOURCE_NOT_FOUND)
    try:
        listed = listed_group(cluster, group_id)
    except AdminError:
        if not configured:
            raise AdminError(f"Connect group '{group_id}' does not exist.",
                             Errors.GROUP_ID_NOT_FOUND) from None
        listed = None
    if listed is None:
        head = {"type": "connect", "state": "empty", "group_epoch": -1, "assignment_epoch": -1,
                "assignor": None}
        workers = []
    elif listed.group_type == "connect":
        head, workers = _described_connect(cluster, group_id)
    elif listed.protocol_type == PROTOCOL_TYPE:
        head, workers = _described_classic(cluster, group_id)
    else:
        raise AdminError(f"Group '{group_id}' is a {listed.group_type} group, not a Connect "
                         "group.", Errors.GROUP_ID_NOT_FOUND)
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


def _described_connect(cluster, group_id: str) -> tuple[dict, list[Row]]:
    d = cluster.describe_connect(group_id)
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise AdminError(f"Connect group '{group_id}' does not exist.", Errors.GROUP_ID_NOT_FOUND)
    raise_for(d.error_code, d.error_message, f"Describe of Connect group '{group_id}' failed")
    head = {"type": "connect", "state": d.group_state, "group_epoch": d.group_epoch,
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


def _described_classic(cluster, group_id: str) -> tuple[dict, list[Row]]:
    """A classic Connect group: each worker's work decoded from its Connect protocol bytes
    (its JoinGroup allocation and its SyncGroup assignment, as Kafka's workers read them)."""
    d = cluster.call(m.DescribeGroupsRequest(groups=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND or d.group_state == "dead":
        raise AdminError(f"Connect group '{group_id}' does not exist.", Errors.GROUP_ID_NOT_FOUND)
    raise_for(d.error_code, d.error_message, f"Describe of Connect group '{group_id}' failed")
    head = {"type": "classic", "state": d.group_state, "group_epoch": d.generation_id,
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


def is_connect_group(listed: m.ListedGroup) -> bool:
    """A group of the new Connect protocol, or a classic group of Connect workers."""
    return listed.group_type == "connect" or listed.protocol_type == PROTOCOL_TYPE
