"""The ``cohort`` command: the Ray demo, chaos runs, the pure case study, and the admin tools.

``cohort groups`` and ``cohort configs`` mirror Kafka's ``kafka-consumer-groups.sh`` and
``kafka-configs.sh`` against a running Cohort; ``cohort export`` and ``cohort timeline`` turn
its state into Parquet files and a picture. The logic lives in ``actors/tools/admin*.py``
(one module per command family); this module parses arguments, connects and prints. Exit
codes: 0 done, 1 refused or failed (the message names the Kafka error), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from typing import TextIO

from actors.tools.cli_gateway import add_gateway_parsers, gateway_commands
from actors.tools.cli_parsers import add_admin_parsers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cohort", description="Kafka group coordination on Ray")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a group of consumers on a local Ray; kill its coordinator")
    demo.add_argument("--storage-path", default="./cohort-data")
    demo.add_argument("--partitions", type=int, default=4)
    chaos = sub.add_parser("chaos", help="kill actors at random while groups run; check invariants")
    chaos.add_argument("--seconds", type=float, default=60.0)
    chaos.add_argument("--groups", type=int, default=3)
    chaos.add_argument("--consumers", type=int, default=3, help="initial consumers per group")
    chaos.add_argument("--topic-partitions", type=int, default=6)
    chaos.add_argument("--partitions", type=int, default=4, help="__consumer_offsets partitions")
    chaos.add_argument("--seed", type=int, default=0)
    chaos.add_argument("--storage-path", default="./cohort-data")
    sub.add_parser("case-study", help="seed 002's Basic case study on the pure coordinator core")
    add_admin_parsers(sub)
    add_gateway_parsers(sub)  # gateway, acls, users (actors/tools/cli_gateway.py)
    args = parser.parse_args(argv)

    if args.command == "demo":
        from actors.tools.demo import run_demo

        return run_demo(args.storage_path, args.partitions)
    if args.command == "chaos":
        return _chaos(args)
    if args.command == "case-study":
        from actors.tools.case_study import run_basic_case_study

        shard = run_basic_case_study()
        return 0 if shard.groups["demo-group"].state == "stable" else 1
    if args.command in ADMIN_COMMANDS:
        return _admin(args, ADMIN_COMMANDS[args.command])
    return 2


def _chaos(args: argparse.Namespace) -> int:
    from actors.cluster import Cluster
    from actors.tools.chaos import run_chaos
    from actors.tools.demo import DEMO_CONFIG

    if getattr(args, "kafka_clients", 0):  # real Kafka consumers too (actors/tools/chaos_kafka)
        from functools import partial

        from actors.tools.chaos_kafka import run_chaos as with_kafka

        run_chaos = partial(with_kafka, kafka_clients=args.kafka_clients)

    cluster = Cluster.start(num_partitions=args.partitions, storage_path=args.storage_path,
                            config=DEMO_CONFIG)
    try:
        with tempfile.TemporaryDirectory(prefix="cohort-chaos-") as workdir:
            report = run_chaos(cluster, args.seconds, workdir, groups=args.groups,
                               consumers=args.consumers, partitions=args.topic_partitions,
                               seed=args.seed)
        print(report.summary())
        return 0 if not report.violations else 1
    finally:
        cluster.shutdown()


# ---------------------------------------------------------------------------- admin commands


class UsageError(Exception):
    pass


def _admin(args: argparse.Namespace, command: Callable[[argparse.Namespace], int]) -> int:
    from actors.tools.admin import AdminError, to_json
    from protocol.errors import CoordinatorError

    _ray_environment()
    _keep_stdout_for_results()
    try:
        return command(args)
    except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), _RESULTS.fileno())
        return 1
    except UsageError as e:
        print(f"cohort {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (AdminError, CoordinatorError) as e:
        name = e.error.name if e.error is not None else None
        message = e.message if isinstance(e, AdminError) else (e.message or name)
        if args.json:
            _print(to_json({"error": name, "message": message}))
        print(f"Error: {e}" if isinstance(e, AdminError) else f"Error: {message} ({name})",
              file=sys.stderr)
        return 1
    except (ConnectionError, RuntimeError, TimeoutError) as e:
        if args.json:
            _print(to_json({"error": type(e).__name__, "message": str(e)}))
        print(f"Error: {e}", file=sys.stderr)
        return 1


_RESULTS: TextIO = sys.stdout


def _print(*values: object) -> None:
    """A command's result, on the real stdout (``--json`` readers parse it whole)."""
    print(*values, file=_RESULTS, flush=True)


def _keep_stdout_for_results() -> None:
    """Only results reach stdout: whatever else writes there while the command runs (Ray's
    log threads warning about worker processes, Spark's JVM) is sent to stderr instead."""
    global _RESULTS
    sys.stdout.flush()
    _RESULTS = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr


def _ray_environment() -> None:
    """What Ray reads from the environment when it is imported, so set before any import.

    Ray 2.60 clusters want a token by default and a driver sends its token only in token mode,
    which ``ray.init`` sets for its own process but an operator's shell has not; a cluster
    without auth accepts a token-mode driver too.
    """
    os.environ.setdefault("RAY_LOGGER_LEVEL", "warning")  # no "Connecting to..." chatter
    has_token = (
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    )
    if has_token:
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def _connect(args: argparse.Namespace):
    from actors.cluster import Cluster

    try:
        return Cluster.connect(args.address)
    except (ConnectionError, ValueError) as e:
        where = args.address or "RAY_ADDRESS / the local Ray"
        raise ConnectionError(f"cannot connect to Ray at {where}: {e}") from None


def _emit(args: argparse.Namespace, columns, rows: list[dict], notes: list[str] = ()) -> None:
    from actors.tools.admin import display_rows, format_table, to_json

    if args.json:
        _print(to_json(rows))
        return
    for note in notes:
        _print(note)
    if rows or not notes:
        _print(format_table(columns, display_rows(rows)))


def _split(values: list[str] | None) -> list[str]:
    """``--type consumer,classic`` and ``--type consumer classic`` alike."""
    return [v for item in values or () for v in item.split(",") if v]


def _groups(args: argparse.Namespace) -> int:
    if args.validate_regex is not None:
        return _validate_regex(args)
    if args.list:
        return _list(args)
    if args.all_groups and not args.describe:
        raise UsageError("--all-groups goes with --describe only")
    if not args.group and not args.all_groups:
        raise UsageError("--group is required")
    if args.describe:
        return _describe(args)
    if len(args.group) != 1 and args.reset_offsets:
        raise UsageError("--reset-offsets takes one --group")
    if args.reset_offsets:
        return _reset(args)
    return _delete(args)


def _validate_regex(args: argparse.Namespace) -> int:
    from actors.tools import admin_groups

    admin_groups.check_regex(args.validate_regex)  # a bad pattern fails before any Ray connect
    rows = admin_groups.validate_regex(args.validate_regex, _connect(args).topics())
    notes = [] if rows else [f"No existing topic matches '{args.validate_regex}'."]
    _emit(args, admin_groups.REGEX_COLUMNS, rows, notes)
    return 0


def _list(args: argparse.Namespace) -> int:
    from actors.tools import admin_groups

    rows = admin_groups.list_groups(_connect(args), _split(args.state), _split(args.type))
    _emit(args, admin_groups.LIST_COLUMNS, rows)
    return 0


def _describe(args: argparse.Namespace) -> int:
    from actors.tools import admin_groups

    views = [v for v in ("members", "offsets") if getattr(args, v)]
    if args.state is not None:
        if args.state:
            raise UsageError("--describe --state takes no values (it selects the state view)")
        views.append("state")
    if len(views) > 1:
        raise UsageError("pick one of --members, --state, --offsets")
    view = views[0] if views else "offsets"
    cluster = _connect(args)
    group_ids = args.group or [g["group"] for g in admin_groups.list_groups(cluster)]
    describe, columns = {
        "offsets": (admin_groups.describe_offsets, admin_groups.OFFSETS_COLUMNS),
        "members": (
            admin_groups.describe_members,
            admin_groups.MEMBERS_VERBOSE_COLUMNS if args.verbose else admin_groups.MEMBERS_COLUMNS,
        ),
        "state": (admin_groups.describe_state, admin_groups.STATE_COLUMNS),
    }[view]
    rows, notes = [], []
    for g in group_ids:
        got, said = describe(cluster, g)
        rows += got
        notes += said
    _emit(args, columns, rows, notes)
    return 0


def _reset(args: argparse.Namespace) -> int:
    from actors.tools import admin_offsets

    if not args.topic:
        raise UsageError("--reset-offsets needs --topic")
    if args.to_earliest:
        to = "earliest"
    elif args.to_latest:
        to = "latest"
    elif args.to_offset is not None:
        to = "offset"
    else:
        raise UsageError("--reset-offsets needs one of --to-earliest, --to-latest, --to-offset")
    cluster = _connect(args)
    group_id = args.group[0]
    plan = admin_offsets.plan_reset(cluster, group_id, args.topic, to, args.to_offset)
    notes = []
    if args.execute:
        admin_offsets.execute_reset(cluster, group_id, plan)
    else:
        notes.append("WARN: No action will be performed as the --execute option is missing; "
                     "this is the plan.")
    _emit(args, admin_offsets.RESET_COLUMNS, plan, notes)
    return 0


def _delete(args: argparse.Namespace) -> int:
    from actors.tools.admin import to_json
    from actors.tools.admin_groups import delete_group

    cluster = _connect(args)
    for g in args.group:
        delete_group(cluster, g)
    if args.json:
        _print(to_json({"deleted": args.group}))
    else:
        names = ", ".join(f"'{g}'" for g in args.group)
        _print(f"Deletion of requested consumer groups ({names}) was successful.")
    return 0


def _configs(args: argparse.Namespace) -> int:
    from actors.tools import admin_configs as configs
    from actors.tools.admin import to_json
    from protocol.config import GroupConfig

    add = {k: v for text in args.add_config for k, v in configs.parse_config_pairs(text).items()}
    delete = _split(args.delete_config)
    if args.describe and (add or delete):
        raise UsageError("--add-config / --delete-config go with --alter")
    if args.alter and not (add or delete):
        raise UsageError("--alter needs --add-config or --delete-config")
    if args.alter:
        configs.altered_config(GroupConfig(), add, delete)  # bad names fail before connect
    cluster = _connect(args)
    if args.alter:
        new = configs.alter_configs(cluster, args.group, add, delete)
        if args.json:
            _print(to_json(configs.describe_configs(args.group, new, cluster.config)))
        else:
            _print(f"Completed updating config for group {args.group}.")
        return 0
    current = configs.group_config(cluster, args.group)
    rows = configs.describe_configs(args.group, current, cluster.config, args.all)
    notes = [] if rows else [f"Group '{args.group}' has no dynamic configs."]
    _emit(args, configs.CONFIG_COLUMNS, rows, notes)
    return 0


def _export(args: argparse.Namespace) -> int:
    import ray

    from actors.tools import admin, export

    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "WARNING")  # no per-table progress chatter
    cluster = _connect(args)
    if ray.util.client.ray.is_connected():  # a Ray client cannot host Spark: an actor does
        counts = export.export_via_actor(cluster.num_partitions, args.out, use_spark=args.spark)
    elif args.spark:
        import raydp

        spark = export.start_spark(num_executors=args.executors,
                                   executor_memory=args.executor_memory)
        try:
            counts = export.export_parquet(cluster.partitions(), args.out, spark)
        finally:
            raydp.stop_spark()
    else:
        counts = export.export_parquet(cluster.partitions(), args.out)
    rows = [{"table": name, "rows": n, "path": os.path.join(args.out, name)}
            for name, n in counts.items()]
    _emit(args, admin.EXPORT_COLUMNS, rows)
    return 0


def _timeline(args: argparse.Namespace) -> int:
    from actors.tools import admin_timelines
    from actors.tools.admin import AdminError
    from actors.tools.timeline_plot import draw_timeline

    timelines: dict[str, list[dict]] = {}
    history: list[dict] = []
    if args.timelines:
        timelines = admin_timelines.load_timelines(args.timelines, args.group)
    if args.rebalances or not args.timelines:
        history = admin_timelines.rebalance_history(_connect(args), args.group)
    if not timelines and not history:
        raise AdminError(
            f"Nothing to draw for group '{args.group}': it has no rebalance history; pass "
            "--timelines DIR, the files ConsumerClient(timeline_path=...) appends to.")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise AdminError(f"Cannot write {args.out}: no directory {out_dir}.")
    summary = draw_timeline(timelines, args.out, rebalances=history,
                            title=f"group {args.group}: partition ownership")
    row = {"out": summary.path, "members": len(summary.members),
           "partitions": len(summary.lanes), "ownerships": len(summary.bars),
           "rebalances": summary.rebalances}
    _emit(args, admin_timelines.TIMELINE_COLUMNS, [row])
    return 0


ADMIN_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "groups": _groups,
    "configs": _configs,
    "export": _export,
    "timeline": _timeline,
}
ADMIN_COMMANDS.update(gateway_commands(_connect, _emit, _print))


if __name__ == "__main__":
    sys.exit(main())
