#!/usr/bin/env bash
# Set everything up, lint, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

# One pytest session: "what" names it; exit code 5 (nothing collected) is a failure, not a pass.
session() {
  local what=$1
  shift
  set +e
  python -m pytest "$@"
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no $what tests; that is a failure, not a pass" >&2
    return 1
  fi
  return "$rc"
}

ruff check .
session "" --durations=30 "$@"
# Arguments choose tests: then only those run.
[ "$#" -gt 0 ] && exit 0
# Cohort in front of real upstream brokers (tests/upstream): a Cohort with an upstream, so a
# Ray and a session of their own.
session upstream --durations=10 -o addopts="-ra --strict-markers" -m upstream tests/upstream
# Several Ray nodes on this machine (tests/multinode): their own Ray, so their own session.
session multinode --durations=10 -o addopts="-ra --strict-markers" -m multinode tests/multinode
