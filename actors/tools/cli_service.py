"""``cohort start``, ``stop``, ``status`` and ``topics``: parse, call ``admin_service`` /
``admin_topics``, print (results on stdout through ``cli_io``, the rest on stderr)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from actors.tools.cli_io import UsageError, connect, emit, print_result


def _start(args: argparse.Namespace) -> int:
    from actors.tools import admin_service
    from actors.tools.admin import to_json

    if args.partitions is not None and args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    overrides = admin_service.parse_broker_configs(args.config)
    admin_service.broker_config(overrides)  # a config it refuses fails before any connect
    upstream_config = admin_service.parse_upstream_configs(args.upstream_config)
    if upstream_config and not args.upstream:
        raise UsageError("--upstream-config goes with --upstream host:port")
    cluster, adopted = admin_service.start(args.address, args.partitions, args.storage,
                                           overrides, args.shared_storage, args.upstream,
                                           upstream_config)
    row = admin_service.start_rows(cluster, adopted)
    if args.json:
        print_result(to_json(row))
        return 0
    what = "Cohort is already running" if adopted else "Started Cohort"
    front = f", in front of {row['upstream']}" if row.get("upstream") else ""
    print_result(f"{what}: {row['partitions']} partitions, storage {row['storage_path']}"
                 f"{front}, on Ray {row['ray_address']}.")
    if not adopted:
        print_result("Next: cohort topics --create --topic T --partitions N, then spawn "
                     "consumers (Cluster.connect() in Python); cohort status shows its health.")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from actors.tools import admin_service
    from actors.tools.admin import to_json

    stopped = admin_service.stop(args.address)
    if args.json:
        print_result(to_json(stopped))
        return 0
    storage = stopped["storage_path"]
    kept = f" The data stays in {storage}." if storage else ""
    print_result(f"Stopped Cohort: {', '.join(stopped['stopped'])}.{kept}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from actors.tools import admin_service
    from actors.tools.admin import format_table, to_json

    report = admin_service.status(args.address)
    if args.json:
        print_result(to_json(report))
    else:
        health = "serving" if report["serving"] else "NOT SERVING"
        print_result(f"Cohort on Ray {report['ray_address']}: {health}; "
                     f"{report['partitions']} partitions, storage {report['storage_path']}, "
                     f"{report['topics']} topics, metadata image {report['image_version']}.")
        up = report.get("upstream")
        if up is not None:
            seen = "reachable" if up.get("reachable") else f"NOT REACHABLE ({up.get('error')})"
            print_result(f"Upstream {up.get('bootstrap', '?')}: {seen}; brokers "
                         f"{sorted((up.get('brokers') or {}).keys())}, "
                         f"{up.get('topics', 0)} topics seen.")
        print_result(format_table(admin_service.STATUS_COLUMNS, report["actors"]))
        for row in report["actors"]:
            if row.get("refusal"):
                print_result(f"{row['actor']} refuses to serve: {row['refusal']}")
    return 0 if report["serving"] else 1


def _topics(args: argparse.Namespace) -> int:
    from actors.tools import admin_topics as topics
    from actors.tools.admin import to_json

    if (args.create or args.alter or args.delete) and not args.topic:
        raise UsageError(f"--{_action(args)} needs --topic")
    if args.partitions is not None and not (args.create or args.alter):
        raise UsageError("--partitions goes with --create or --alter")
    if args.create:
        topics.check_create(args.partitions, args.replication_factor)  # before any connect
    cluster = connect(args)
    if args.list:
        names = topics.list_topics(cluster, args.topic)
        print_result(to_json(names) if args.json else "\n".join(names))
    elif args.describe:
        rows = topics.describe_topics(cluster, args.topic, args.if_exists)
        if args.json:
            emit(args, [], rows)
        elif rows:
            print_result("\n".join(topics.description_lines(rows)))
    elif args.create:
        topic_id = topics.create_topic(cluster, args.topic, args.partitions,
                                       args.replication_factor, args.if_not_exists)
        if args.json:
            print_result(to_json({"created": topic_id is not None, "topic": args.topic,
                                  "topic_id": topic_id}))
        elif topic_id is not None:
            print_result(f"Created topic {args.topic}.")
    elif args.alter:
        altered = topics.alter_topics(cluster, args.topic, args.partitions, args.if_exists)
        if args.json:
            print_result(to_json({"altered": altered, "partitions": args.partitions}))
    else:
        deleted = topics.delete_topics(cluster, args.topic, args.if_exists)
        if args.json:
            print_result(to_json({"deleted": deleted}))
    return 0


def _action(args: argparse.Namespace) -> str:
    return next(a for a in ("create", "list", "describe", "alter", "delete") if getattr(args, a))


SERVICE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "start": _start,
    "stop": _stop,
    "status": _status,
    "topics": _topics,
}
