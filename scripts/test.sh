#!/usr/bin/env bash
# Set everything up, lint, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

ruff check .
set +e
python -m pytest --durations=30 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure, not a pass" >&2
  exit 1
fi
[ "$rc" -ne 0 ] && exit "$rc"
# Arguments choose tests: then only those run.
[ "$#" -gt 0 ] && exit 0
# Cohort in front of real upstream brokers (tests/upstream): a Cohort with an upstream, so a
# Ray and a session of their own.
set +e
python -m pytest --durations=10 -o addopts="-ra --strict-markers" -m upstream tests/upstream
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no upstream tests; that is a failure, not a pass" >&2
  exit 1
fi
[ "$rc" -ne 0 ] && exit "$rc"
# Several Ray nodes on this machine (tests/multinode): their own Ray, so their own session.
set +e
python -m pytest --durations=10 -o addopts="-ra --strict-markers" -m multinode tests/multinode
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no multinode tests; that is a failure, not a pass" >&2
  exit 1
fi
exit "$rc"
