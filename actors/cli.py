"""The ``cohort`` command: the Ray demo, chaos runs, and the pure case study."""

from __future__ import annotations

import argparse
import sys
import tempfile


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
    args = parser.parse_args(argv)

    if args.command == "demo":
        from actors.demo import run_demo

        return run_demo(args.storage_path, args.partitions)
    if args.command == "chaos":
        return _chaos(args)
    if args.command == "case-study":
        from actors.case_study import run_basic_case_study

        shard = run_basic_case_study()
        return 0 if shard.groups["demo-group"].state == "stable" else 1
    return 2


def _chaos(args: argparse.Namespace) -> int:
    from actors.chaos import run_chaos
    from actors.cluster import Cluster
    from actors.demo import DEMO_CONFIG

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


if __name__ == "__main__":
    sys.exit(main())
