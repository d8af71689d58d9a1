"""``cohort connectors``: create, alter, delete, list and describe a Connect cluster's connectors.

The arguments and the printing; the logic is ``admin_connectors``. ``cli`` registers the
command through ``add_connectors_parser`` and ``CONNECTORS_COMMANDS``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from actors.tools.cli_io import UsageError, connect, emit, print_result
from actors.tools.cli_parsers import common_options, wrap


def add_connectors_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "connectors", parents=[common_options()],
        help="create, alter, delete, list, describe Kafka Connect connectors",
        description=wrap("The connectors of a Kafka Connect cluster (a Connect worker group: "
                         "--group is the cluster's group.id), kept by Cohort's controller as "
                         "Connect keeps them in its config topic. --describe shows each worker "
                         "of the group with the connectors and tasks it runs, and the work no "
                         "worker runs (held for a departed worker, or not yet handed out)."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""\
examples:
  cohort connectors --create --group connect-a --connector sink --tasks 8
  cohort connectors --alter --group connect-a --connector sink --tasks 12
  cohort connectors --list --group connect-a
  cohort connectors --describe --group connect-a
  cohort connectors --delete --group connect-a --connector sink""",
    )
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="add --connector with --tasks")
    action.add_argument("--alter", action="store_true", help="change --connector's --tasks")
    action.add_argument("--delete", action="store_true", help="remove --connector")
    action.add_argument("--list", action="store_true", help="the group's connectors")
    action.add_argument("--describe", action="store_true",
                        help="each worker's connectors and tasks (all, or --connector's)")
    p.add_argument("--group", required=True, metavar="G", help="the Connect cluster's group id")
    p.add_argument("--connector", metavar="NAME", help="the connector")
    p.add_argument("--tasks", type=int, metavar="N",
                   help="--create (default 1) / --alter: the connector's task count "
                        "(Connect's tasks.max)")


def _connectors(args: argparse.Namespace) -> int:
    from actors.tools import admin_connectors as connectors
    from actors.tools.admin import to_json

    action = next(a for a in ("create", "alter", "delete", "list", "describe")
                  if getattr(args, a))
    if action in ("create", "alter", "delete") and not args.connector:
        raise UsageError(f"--{action} needs --connector")
    if args.tasks is not None and action not in ("create", "alter"):
        raise UsageError("--tasks goes with --create or --alter")
    if action == "alter" and args.tasks is None:
        raise UsageError("--alter needs --tasks")
    if action == "list" and args.connector:
        raise UsageError("--list takes no --connector")
    tasks = 1 if action == "create" and args.tasks is None else args.tasks
    connectors.check_tasks(tasks)  # a bad count fails before any connect
    cluster = connect(args)
    g, name = args.group, args.connector
    if action == "list":
        rows = connectors.list_connectors(cluster, g)
        emit(args, connectors.LIST_COLUMNS, rows,
             [] if rows else [f"Connect group '{g}' has no connectors."])
    elif action == "describe":
        described = connectors.describe(cluster, g, name)
        if args.json:
            print_result(to_json(described))
        else:
            emit(args, connectors.WORKERS_COLUMNS, connectors.worker_rows(described),
                 connectors.describe_notes(described))
    elif action == "delete":
        connectors.delete_connector(cluster, g, name)
        print_result(to_json({"deleted": name, "group": g}) if args.json
                     else f"Deleted connector {name} of Connect group {g}.")
    else:
        change = connectors.create_connector if action == "create" else \
            connectors.alter_connector
        change(cluster, g, name, tasks)
        verb = "Created" if action == "create" else "Altered"
        print_result(to_json({verb.lower(): name, "group": g, "tasks": tasks}) if args.json
                     else f"{verb} connector {name} of Connect group {g}: {tasks} tasks.")
    return 0


CONNECTORS_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "connectors": _connectors,
}
