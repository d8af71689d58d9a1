"""The ``cohort`` command."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cohort", description="Kafka group coordination on Ray")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="play seed 002's Basic case study against the coordinator core")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from actors.demo import run_basic_case_study

        shard = run_basic_case_study()
        return 0 if shard.groups["demo-group"].state == "stable" else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
