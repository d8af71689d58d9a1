"""The ``cohort`` command: the service, the admin tools, the Ray demo, chaos runs, the case study.

``cohort start`` / ``stop`` / ``status`` run Cohort as a service on a Ray cluster
(``cli_service``); ``cohort topics``, ``groups`` and ``configs`` mirror Kafka's
``kafka-topics.sh``, ``kafka-consumer-groups.sh`` and ``kafka-configs.sh`` against it;
``cohort connectors`` manages a Kafka Connect cluster's connectors (``cli_connectors``);
``cohort export`` and ``cohort timeline`` turn its state into Parquet files and a picture. The
logic lives in ``actors/tools/admin*.py`` (one module per command family); this module and
``cli_service`` parse, connect and print (``cli_io``). Exit codes: 0 done, 1 refused or failed
(the message names the Kafka error, or the command that fixes it), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable

from actors.tools.chaos_consent import add_consent_arguments
from actors.tools.chaos_schedule import DEFAULT_PAUSE_S
from actors.tools.cli_connectors import CONNECTORS_COMMANDS, add_connectors_parser
from actors.tools.cli_gateway import add_gateway_parsers, gateway_commands
from actors.tools.cli_io import UsageError, connect, emit, print_result, run_admin, split
from actors.tools.cli_parsers import add_admin_parsers
from actors.tools.cli_service import SERVICE_COMMANDS
from actors.tools.cli_service_parsers import add_service_parsers

RAW = argparse.RawDescriptionHelpFormatter


# Where a cohort command keeps the raylet's messages (``ray_driver.init_ray`` reads it).
RAY_MESSAGES_ENV = "COHORT_RAY_MESSAGES_LOG"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cohort", description="Kafka group coordination on Ray",
        formatter_class=RAW, epilog="""\
quick start:
  ray start --head
  cohort start
  cohort topics --create --topic orders --partitions 6
  python: Cluster.connect().spawn_consumer("g1", ["orders"])   # lives while that driver runs
  cohort groups --describe --group g1""")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a group of consumers on a local Ray; kill its coordinator",
                          formatter_class=RAW, epilog="example:\n  cohort demo")
    demo.add_argument("--storage-path", default="./cohort-data")
    demo.add_argument("--partitions", type=int, default=None,
                      help="__consumer_offsets partitions (default 4; a running Cohort's own)")
    chaos = sub.add_parser(
        "chaos", help="kill actors at random while groups run; check invariants",
        formatter_class=RAW, epilog="""\
Every random choice comes from --seed: a run of --steps N replays the same kills.
Consumer groups and Kafka Connect worker groups run side by side; partitions, the
controller, consumers and Connect workers are killed, connectors change task counts.

examples:
  cohort chaos --seconds 60
  cohort chaos --seed 7 --steps 40     # replay the schedule a report printed""")
    length = chaos.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, default=None, help="run length (default 60)")
    length.add_argument("--steps", type=int, default=None,
                        help="run exactly this many steps of the seed's schedule")
    chaos.add_argument("--groups", type=int, default=3, help="KIP-848 consumer groups")
    chaos.add_argument("--classic-groups", type=int, default=1, help="classic consumer groups")
    chaos.add_argument("--connect-groups", type=int, default=1,
                       help="Kafka Connect worker groups on the new protocol")
    chaos.add_argument("--classic-connect-groups", type=int, default=1,
                       help="classic Kafka Connect worker groups (sessioned)")
    chaos.add_argument("--share-groups", type=int, default=0,
                       help="share groups (KIP-932) of Ray share consumers")
    chaos.add_argument("--streams-groups", type=int, default=0,
                       help="streams groups (KIP-1071) of Ray streams members")
    chaos.add_argument("--consumers", type=int, default=3,
                       help="initial consumers (and Connect workers) per group")
    chaos.add_argument("--topic-partitions", type=int, default=6)
    chaos.add_argument("--partitions", type=int, default=None,
                       help="__consumer_offsets partitions (default 4; a running Cohort's own)")
    chaos.add_argument("--seed", type=int, default=0)
    chaos.add_argument("--pause", type=float, nargs=2, default=DEFAULT_PAUSE_S,
                       metavar=("MIN", "MAX"), help="seconds between steps, drawn from the seed")
    chaos.add_argument("--storage-path", default="./cohort-data")
    add_consent_arguments(chaos)  # --address, --yes (actors/tools/chaos_consent.py)
    chaos.add_argument("--node-kills", action="store_true",
                       help="also kill and stall whole Ray nodes (never the head) that host "
                            "partitions: a Ray cluster of several nodes, Cohort on storage "
                            "every node reads (s3://... or --shared-storage)")
    sub.add_parser("case-study", help="seed 002's Basic case study on the pure coordinator core",
                   formatter_class=RAW, epilog="example:\n  cohort case-study")
    add_service_parsers(sub)
    add_admin_parsers(sub)
    add_connectors_parser(sub)
    add_gateway_parsers(sub)  # gateway, acls, users (actors/tools/cli_gateway.py)
    args = parser.parse_args(argv)
    # The command's own progress on the terminal, Ray's messages in a log, once it connects
    # (``ray_driver.init_ray``): Ray is not imported here, before init_ray has chosen the
    # auth mode a token asks for.
    os.environ.setdefault(RAY_MESSAGES_ENV, os.path.join(os.path.expanduser("~"), ".cohort",
                                                        "ray-messages.log"))

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
        return run_admin(args, ADMIN_COMMANDS[args.command])
    return 2


def _chaos(args: argparse.Namespace) -> int:
    from actors.tools.chaos import run_chaos
    from actors.tools.chaos_consent import ChaosRefused, attach
    from actors.tools.demo import DEMO_CONFIG

    if getattr(args, "kafka_clients", 0):  # real Kafka consumers too (actors/tools/chaos_kafka)
        from functools import partial

        from actors.tools.chaos_kafka import run_chaos as with_kafka

        run_chaos = partial(with_kafka, kafka_clients=args.kafka_clients)
    if getattr(args, "share_groups", 0):  # share groups too (actors/tools/chaos_share)
        from functools import partial

        if getattr(args, "kafka_clients", 0):
            raise SystemExit("--share-groups and --kafka-clients do not combine (yet)")

        from actors.tools.chaos_share import run_chaos as with_shares

        run_chaos = partial(with_shares, share_groups=args.share_groups)
    if getattr(args, "streams_groups", 0):  # streams groups too (actors/tools/chaos_streams)
        from functools import partial

        if getattr(args, "kafka_clients", 0):
            raise SystemExit("--streams-groups and --kafka-clients do not combine (yet)")

        from actors.tools.chaos_streams import run_chaos as with_streams

        run_chaos = partial(with_streams, share_groups=getattr(args, "share_groups", 0),
                            streams_groups=args.streams_groups)

    try:
        cluster, owns_ray = attach(args, DEMO_CONFIG)
    except (ChaosRefused, ConnectionError) as e:
        print(f"cohort chaos: {e}", file=sys.stderr)
        return 1
    seconds = 60.0 if args.seconds is None and args.steps is None else args.seconds
    try:
        with tempfile.TemporaryDirectory(prefix="cohort-chaos-") as workdir:
            report = run_chaos(cluster, seconds, workdir, groups=args.groups,
                               consumers=args.consumers, partitions=args.topic_partitions,
                               seed=args.seed, classic_groups=args.classic_groups,
                               pause_s=tuple(args.pause), steps=args.steps,
                               connect_groups=args.connect_groups,
                               classic_connect_groups=args.classic_connect_groups,
                               node_faults=args.node_kills)
        print(report.summary())
        return 0 if not report.violations else 1
    finally:
        cluster.release()  # a Cohort started by `cohort start` stays up
        if owns_ray:
            import ray

            ray.shutdown()


# ---------------------------------------------------------------------------- admin commands


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
    rows = admin_groups.validate_regex(args.validate_regex, connect(args).topics())
    notes = [] if rows else [f"No existing topic matches '{args.validate_regex}'."]
    emit(args, admin_groups.REGEX_COLUMNS, rows, notes)
    return 0


def _list(args: argparse.Namespace) -> int:
    from actors.tools import admin_groups

    rows = admin_groups.list_groups(connect(args), split(args.state), split(args.type))
    emit(args, admin_groups.LIST_COLUMNS, rows)
    return 0


def _describe(args: argparse.Namespace) -> int:
    from actors.tools import admin_groups
    from actors.tools.admin import to_json

    views = [v for v in ("members", "offsets") if getattr(args, v)]
    if args.state is not None:
        if args.state:
            raise UsageError("--describe --state takes no values (it selects the state view)")
        views.append("state")
    if len(views) > 1:
        raise UsageError("pick one of --members, --state, --offsets")
    view = views[0] if views else "offsets"
    cluster = connect(args)
    group_ids = args.group or [g["group"] for g in admin_groups.list_groups(cluster)]
    describe, columns = {
        "offsets": (admin_groups.describe_offsets, admin_groups.OFFSETS_COLUMNS),
        "members": (
            admin_groups.describe_members,
            admin_groups.MEMBERS_VERBOSE_COLUMNS if args.verbose else admin_groups.MEMBERS_COLUMNS,
        ),
        "state": (admin_groups.describe_state, admin_groups.STATE_COLUMNS),
    }[view]
    # A group whose row shows a table of its own for this view (a Connect group's workers, a
    # share group's share-partitions) is shown in it; the others in the view's table.
    listed = {g.group_id: g for g in cluster.list_groups()} if view != "state" else {}
    rows, notes = [], []
    details: dict[tuple, list] = {}  # columns -> [rows, notes], in the order first seen
    for g in group_ids:
        detail = (admin_groups.describe_detail(cluster, g, view, listed[g])
                  if g in listed else None)
        if detail is not None:
            shown = details.setdefault(tuple(detail.columns), [[], []])
            shown[0] += detail.rows
            shown[1] += detail.notes
            continue
        got, said = describe(cluster, g)
        rows += got
        notes += said
    if args.json:
        print_result(to_json(rows + [r for shown, _ in details.values() for r in shown]))
        return 0
    if rows or notes or not details:
        emit(args, columns, rows, notes)
    for detail_columns, (shown, said) in details.items():
        emit(args, list(detail_columns), shown, said)
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
    cluster = connect(args)
    group_id = args.group[0]
    plan = admin_offsets.plan_reset(cluster, group_id, args.topic, to, args.to_offset)
    notes = []
    if args.execute:
        admin_offsets.execute_reset(cluster, group_id, plan)
    else:
        notes.append("WARN: No action will be performed as the --execute option is missing; "
                     "this is the plan.")
    emit(args, admin_offsets.RESET_COLUMNS, plan, notes)
    return 0


def _delete(args: argparse.Namespace) -> int:
    from actors.tools.admin import to_json
    from actors.tools.admin_groups import delete_group

    cluster = connect(args)
    for g in args.group:
        delete_group(cluster, g)
    if args.json:
        print_result(to_json({"deleted": args.group}))
    else:
        names = ", ".join(f"'{g}'" for g in args.group)
        print_result(f"Deletion of requested consumer groups ({names}) was successful.")
    return 0


def _configs(args: argparse.Namespace) -> int:
    from actors.tools import admin_configs as configs
    from actors.tools.admin import to_json
    from protocol.config import GroupConfig

    add = {k: v for text in args.add_config for k, v in configs.parse_config_pairs(text).items()}
    delete = split(args.delete_config)
    if args.describe and (add or delete):
        raise UsageError("--add-config / --delete-config go with --alter")
    if args.alter and not (add or delete):
        raise UsageError("--alter needs --add-config or --delete-config")
    if args.alter:
        configs.altered_config(GroupConfig(), add, delete)  # bad names fail before connect
    cluster = connect(args)
    if args.alter:
        new = configs.alter_configs(cluster, args.group, add, delete)
        if args.json:
            print_result(to_json(configs.describe_configs(args.group, new, cluster.config)))
        else:
            print_result(f"Completed updating config for group {args.group}.")
        return 0
    current = configs.group_config(cluster, args.group)
    rows = configs.describe_configs(args.group, current, cluster.config, args.all)
    notes = [] if rows else [f"Group '{args.group}' has no dynamic configs."]
    emit(args, configs.CONFIG_COLUMNS, rows, notes)
    return 0


def _export(args: argparse.Namespace) -> int:
    import ray

    from actors.tools import admin, export

    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "WARNING")  # no per-table progress chatter
    cluster = connect(args)
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
    emit(args, admin.EXPORT_COLUMNS, rows)
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
        history = admin_timelines.rebalance_history(connect(args), args.group)
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
    emit(args, admin_timelines.TIMELINE_COLUMNS, [row])
    return 0


ADMIN_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    **SERVICE_COMMANDS,
    **CONNECTORS_COMMANDS,
    "groups": _groups,
    "configs": _configs,
    "export": _export,
    "timeline": _timeline,
}
ADMIN_COMMANDS.update(gateway_commands())


if __name__ == "__main__":
    sys.exit(main())
