"""The nightly-size chaos run: ``cohort chaos`` for 60 s (or more) with more groups.

Run: ``python bench/chaos.py [--seconds 60] [--groups 4] [--consumers 4] [--seed N]``.
Same runner as the suite's short form (``tests/chaos``), bigger and longer; it exits non-zero
on any violation of DESIGN.md's invariants 1-4 and prints the kill and rebalance counts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.tools.cli import main as cohort


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--topic-partitions", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--storage-path", default="./cohort-data/bench-chaos")
    a = ap.parse_args()
    return cohort([
        "chaos", "--seconds", str(a.seconds), "--groups", str(a.groups),
        "--consumers", str(a.consumers), "--topic-partitions", str(a.topic_partitions),
        "--seed", str(a.seed), "--storage-path", a.storage_path,
    ])


if __name__ == "__main__":
    sys.exit(main())
