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
# Arguments choose tests: then only those run, in one session.
if [ "$#" -gt 0 ]; then
  session "" --durations=30 "$@"
  exit 0
fi
# Two lanes at once, one per core: the tests that need the session's Ray, Spark or a JVM (the
# reference broker, the Java clients), and beside them the pure ones (no Ray, no JVM), whose
# report follows the first lane's. Ray tests must hold with both cores busy; here they are.
pure_log=$(mktemp -t cohort-pure-tests.XXXXXX)
( session pure --durations=15 -p no:cacheprovider -m "not ray and not spark and not jvm" \
    >"$pure_log" 2>&1 ) &
pure_pid=$!
set +e
session "Ray, Spark and JVM" --durations=30 -m "ray or spark or jvm"
ray_rc=$?
wait "$pure_pid"
pure_rc=$?
set -e
echo "================================ the pure lane ================================"
cat "$pure_log"
rm -f "$pure_log"
if [ "$ray_rc" -ne 0 ] || [ "$pure_rc" -ne 0 ]; then
  echo "test.sh: the Ray lane exited $ray_rc, the pure lane $pure_rc" >&2
  exit 1
fi
# Cohort in front of real upstream brokers (tests/upstream): a Cohort with an upstream, so a
# Ray and a session of their own.
session upstream --durations=10 -o addopts="-ra --strict-markers" -m upstream tests/upstream
# Several Ray nodes on this machine (tests/multinode): their own Ray, so their own session.
session multinode --durations=10 -o addopts="-ra --strict-markers" -m multinode tests/multinode
