"""The arguments of ``cohort start``, ``stop``, ``status`` and ``topics``.

``start`` / ``stop`` / ``status`` run Cohort as a service on a Ray cluster; ``topics`` is
``kafka-topics.sh``'s shape (the same actions and options). Every ``--help`` ends with an
example; ``cli_service`` runs the commands.
"""

from __future__ import annotations

import argparse

from actors.tools.cli_parsers import common_options, wrap

RAW = argparse.RawDescriptionHelpFormatter


def add_service_parsers(sub: argparse._SubParsersAction) -> None:
    common = common_options()

    start = sub.add_parser(
        "start", parents=[common], formatter_class=RAW,
        help="start Cohort's actors on a running Ray cluster and return",
        description=wrap("Start Cohort's coordinator (the controller and one actor per "
                    "__consumer_offsets partition, detached and named in namespace 'cohort') "
                    "on the Ray cluster at --address, and return: the actors outlive the "
                    "command. A Cohort already running with the same settings is left as it "
                    "is; one running with other settings is refused."),
        epilog="""\
examples:
  ray start --head
  cohort start --partitions 8 --storage /mnt/efs/cohort-data
  AWS_ENDPOINT_URL=http://minio:9000 cohort start --storage s3://cohort/prod
  cohort start --address ray://head:10001 --config group.consumer.session.timeout.ms=10000
  cohort start --upstream broker1:9092 --upstream-config security.protocol=SASL_SSL \
      --upstream-config sasl.mechanism=SCRAM-SHA-512 --upstream-config sasl.username=cohort""",
    )
    start.add_argument("--partitions", type=int, metavar="N",
                       help="__consumer_offsets partitions (default 4; a running Cohort's own)")
    start.add_argument("--storage", metavar="PATH",
                       help="where the logs live: a directory every node mounts, or "
                            "s3://bucket/prefix (endpoint and keys from the AWS_* variables) "
                            "(default ./cohort-data; a running Cohort's own)")
    start.add_argument("--shared-storage", action="store_true",
                       help="the local --storage path is a mount every node shares (EFS, "
                            "NFS): without it a local path on a cluster of several nodes is "
                            "refused, since a partition moved to another node would find "
                            "an empty directory there")
    start.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker config of the group coordinator, by Kafka's key "
                            "(group.consumer.heartbeat.interval.ms=500); repeatable")
    start.add_argument("--upstream", metavar="HOST:PORT[,HOST:PORT]",
                       help="a Kafka-compatible cluster that keeps the topics and records: "
                            "Cohort coordinates its groups and relays the rest to it")
    start.add_argument("--upstream-config", action="append", default=[], metavar="KEY=VALUE",
                       help="how Cohort reaches the upstream, by the clients' keys "
                            "(security.protocol, sasl.mechanism, sasl.username, "
                            "sasl.password, ssl.ca.location, ...); repeatable")

    sub.add_parser(
        "stop", parents=[common], formatter_class=RAW,
        help="stop Cohort's actors (the data stays on disk)",
        description=wrap("Kill Cohort's detached actors (controller, partitions, gateway) for "
                    "good. Their logs stay in the storage path: `cohort start` with the same "
                    "storage brings back every topic, group and committed offset."),
        epilog="""\
example:
  cohort stop && cohort start     # a restart: nothing acknowledged is lost""",
    )

    sub.add_parser(
        "status", parents=[common], formatter_class=RAW,
        help="is every Cohort actor serving? (exit code 1 if not)",
        description=wrap("Each Cohort actor as Ray and the actor itself see it: state (a "
                    "partition is loading, active or failed; Ray may say restarting or dead), "
                    "pid, node, groups, live records, how long its last load took, and how "
                    "often Ray restarted it. Exit code 0 when everything serves, 1 otherwise."),
        epilog="""\
examples:
  cohort status
  cohort status --json | jq '.actors[] | select(.serving | not)'""",
    )

    topics = sub.add_parser(
        "topics", parents=[common], formatter_class=RAW,
        help="create, list, describe, alter, delete topics (kafka-topics.sh)",
        description=wrap("Cohort's topics, as kafka-topics.sh handles them. Cohort keeps topic "
                    "metadata only (what group coordination needs), no records: no replicas, "
                    "no leaders, no topic configs. --topic is a regular expression matched "
                    "against whole names, commas separating alternatives, as in Kafka."),
        epilog="""\
examples:
  cohort topics --create --topic orders --partitions 6
  cohort topics --list
  cohort topics --describe --topic 'orders|audit'
  cohort topics --alter --topic orders --partitions 12
  cohort topics --delete --topic orders""",
    )
    action = topics.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create --topic T")
    action.add_argument("--list", action="store_true", help="list the topics' names")
    action.add_argument("--describe", action="store_true",
                        help="describe the topics (all, or those --topic matches)")
    action.add_argument("--alter", action="store_true",
                        help="grow the --topic to --partitions in total")
    action.add_argument("--delete", action="store_true", help="delete the --topic")
    topics.add_argument("--topic", metavar="T",
                        help="a topic name, or a pattern of them (except with --create)")
    topics.add_argument("--partitions", type=int, metavar="N",
                        help="--create: the partition count (default 1); --alter: the new "
                             "total")
    topics.add_argument("--replication-factor", type=int, metavar="R",
                        help="accepted as Kafka accepts it (1-32767) and ignored: Cohort "
                             "stores no records")
    topics.add_argument("--if-not-exists", action="store_true",
                        help="--create: no error if the topic exists")
    topics.add_argument("--if-exists", action="store_true",
                        help="--alter, --describe, --delete: no error if no topic matches")
