"""The admin commands' arguments (``cohort groups``, ``configs``, ``export``, ``timeline``), shaped
as Kafka's tools shape theirs; ``cli`` parses with them and runs the commands. Every command's
``--help`` ends with an example (``cli_service_parsers`` holds the service and topic commands)."""

from __future__ import annotations

import argparse
import textwrap

RESET_LATEST_HELP = (
    "reset to the latest offset. Cohort keeps no log, so 'latest' is the highest offset any "
    "group has committed for the partition (a lower bound of the log end), or 0 when no group "
    "has committed one"
)


def wrap(text: str) -> str:
    """A description pre-wrapped, for parsers whose epilog keeps its own lines."""
    return textwrap.fill(text, width=88)


def common_options() -> argparse.ArgumentParser:
    """``--address`` and ``--json``, which every admin command takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", default=None,
                        help="the Ray cluster: host:port of its GCS or ray://head:10001 "
                             "(default: RAY_ADDRESS, else the local running Ray)")
    common.add_argument("--json", action="store_true", help="print JSON for scripts")
    return common


def add_admin_parsers(sub: argparse._SubParsersAction) -> None:
    common = common_options()

    groups = sub.add_parser(
        "groups", parents=[common], help="list, describe, reset offsets of, delete groups",
        description=wrap("Consumer groups, as kafka-consumer-groups.sh shows and changes them."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""\
Cohort keeps committed offsets but no log: LOG-END-OFFSET and LAG show '-'.
--reset-offsets commits as an admin (no member, generation -1) and only for an
existing group that is inactive (Empty); the plan is printed either way. A group
known only by its committed offsets is described as an empty classic group, as
Kafka shows it.

examples:
  cohort groups --list --state Stable
  cohort groups --describe --group g1 --members --verbose
  cohort groups --reset-offsets --group g2 --topic orders --to-earliest --execute
  cohort groups --delete --group g2""",
    )
    action = groups.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the groups")
    action.add_argument("--describe", action="store_true", help="describe --group G")
    action.add_argument("--delete", action="store_true", help="delete --group G (must be empty)")
    action.add_argument("--reset-offsets", action="store_true",
                        help="reset the committed offsets of an inactive --group on --topic")
    action.add_argument("--validate-regex", metavar="PATTERN",
                        help="which existing topics a subscription regex (RE2) matches")
    groups.add_argument("--group", action="append", default=[], metavar="G",
                        help="the group (repeatable for --describe / --delete)")
    groups.add_argument("--all-groups", action="store_true", help="--describe every group")
    groups.add_argument("--state", nargs="*", metavar="S",
                        help="with --list: only groups in these states (Stable, Empty, "
                             "Assigning, Reconciling, PreparingRebalance, ...); with "
                             "--describe: the state view")
    groups.add_argument("--type", nargs="*", metavar="T",
                        help="with --list: only groups of these types (consumer, classic, "
                             "connect)")
    groups.add_argument("--members", action="store_true", help="--describe: the members view")
    groups.add_argument("--offsets", action="store_true",
                        help="--describe: the offsets view (the default)")
    groups.add_argument("--verbose", action="store_true",
                        help="--describe --members: epochs and assignments too")
    groups.add_argument("--topic", action="append", default=[], metavar="T[:P,P]",
                        help="--reset-offsets: a topic, or some of its partitions (repeatable)")
    to = groups.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to offset 0")
    to.add_argument("--to-latest", action="store_true", help=RESET_LATEST_HELP)
    to.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N")
    run = groups.add_mutually_exclusive_group()
    run.add_argument("--execute", action="store_true", help="commit the reset (else: plan only)")
    run.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")

    configs = sub.add_parser(
        "configs", parents=[common], help="describe or alter dynamic group configs",
        description=wrap("Dynamic group configs, as kafka-configs.sh --entity-type groups handles "
                    "them. They need no existing group: set before it exists, kept after it "
                    "is deleted."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""\
examples:
  cohort configs --group g1 --alter --add-config consumer.session.timeout.ms=30000
  cohort configs --group g1 --describe --all""",
    )
    configs.add_argument("--group", "--entity-name", dest="group", required=True, metavar="G")
    configs.add_argument("--entity-type", choices=["groups"], default="groups",
                         help="only 'groups' (accepted for kafka-configs.sh compatibility)")
    what = configs.add_mutually_exclusive_group(required=True)
    what.add_argument("--describe", action="store_true", help="the group's dynamic configs")
    what.add_argument("--alter", action="store_true", help="change them (--add/--delete-config)")
    configs.add_argument("--all", action="store_true",
                         help="--describe: the broker defaults of the unset configs too")
    configs.add_argument("--add-config", action="append", default=[], metavar="k=v[,k=v]",
                         help="consumer.session.timeout.ms, consumer.heartbeat.interval.ms")
    configs.add_argument("--delete-config", action="append", default=[], metavar="k[,k]",
                         help="back to the broker default")

    export = sub.add_parser(
        "export", parents=[common], help="the coordinator's state as Parquet tables",
        description=wrap("Write groups, members, target_assignment, current_assignment, offsets "
                    "and rebalances as Parquet under DIR/<table>/ (replacing an earlier "
                    "export). From a ray:// client the files are written by an actor inside "
                    "the cluster, on its node."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""\
example:
  cohort export --out ./cohort-export --json""",
    )
    export.add_argument("--out", required=True, metavar="DIR")
    export.add_argument("--spark", action="store_true",
                        help="write through a Spark session on Ray (RayDP; needs Java and a "
                             "free CPU) instead of ray.data's writers")
    export.add_argument("--executors", type=int, default=1, help="--spark: executors")
    export.add_argument("--executor-memory", default="1GB", help="--spark: per executor")

    timeline = sub.add_parser("timeline", parents=[common],
                              help="draw who owned which partition when, for one group",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog="""\
examples:
  cohort timeline --group g1 --out g1.png
  cohort timeline --group g1 --timelines ./timelines --rebalances --out g1.png""")
    timeline.add_argument("--group", required=True, metavar="G")
    timeline.add_argument("--out", default="timeline.png", metavar="PNG")
    timeline.add_argument("--timelines", metavar="DIR",
                          help="JSON-lines files consumers appended to (ConsumerClient "
                               "timeline_path), one per consumer; read offline")
    timeline.add_argument("--rebalances", action="store_true",
                          help="with --timelines: also mark the group's rebalance history "
                               "from the coordinator (the default without --timelines)")
