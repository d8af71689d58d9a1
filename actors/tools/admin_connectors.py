"""``cohort connectors``: a Connect cluster's connectors and which worker runs what.

Kafka Connect keeps its connectors in a config topic and shows them through its REST API
(``POST /connectors``, ``PUT /connectors/{name}/config``, ``GET /connectors/{name}/status``);
Cohort keeps them in the controller (the config topic's stand-in, seed 004) and the command
speaks to it: create, alter (a new task count: Connect's ``tasks.max``), delete, list. The
describe view is the coordinator's, the one ``cohort groups --describe`` shows of a Connect
group (``protocol.connect.workers_view``): per worker, its epoch, its state and the connectors
and tasks it runs, and the work configured but run by no worker.

Refusals carry the controller's Kafka error: DUPLICATE_RESOURCE (name taken),
RESOURCE_NOT_FOUND (no such connector), INVALID_CONFIG (a task count outside 1..1,000,000),
INVALID_REQUEST (a bad name), GROUP_ID_NOT_FOUND (no such Connect group to describe).
"""

from __future__ import annotations

from actors.tools.admin import AdminError, Columns, Row
from actors.tools.admin_groups import listed_group
from protocol.connect.workers_view import (  # noqa: F401 (the command prints with them)
    WORKERS_COLUMNS,
    describe_notes,
    describe_workers,
    worker_rows,
)
from protocol.errors import CoordinatorError, Errors

# The controller's bound on a connector's task count (checked here before any connect too).
MAX_TASKS = 1_000_000

LIST_COLUMNS: Columns = [("GROUP", "group"), ("CONNECTOR", "connector"), ("TASKS", "tasks")]


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
    """The group, its configured connectors (the controller's), each worker's share and what
    no worker runs (``protocol.connect.workers_view``).

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
    try:
        return describe_workers(cluster, group_id, listed, configured, connector)
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None
