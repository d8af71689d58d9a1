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
# Three lanes at once. The tests that need Ray, Spark or a JVM (the reference broker, the Java
# clients) mostly wait on sessions and timers, so they run as two sessions, each with a Ray of
# its own (tests/actors, and the rest); the pure tests (no Ray, no JVM) keep a core busy beside
# them. Ray tests must hold with both cores busy: here they are. Each lane's report follows.
RAY_TESTS="ray or spark or jvm"
lane() {  # name, then pytest arguments: runs in the background, its report in a file
  local name=$1
  shift
  ( rc=0
    session "$name" -p no:cacheprovider "$@" >"$lanes/$name.log" 2>&1 || rc=$?
    echo "$rc" >"$lanes/$name.rc" ) &
}
lanes=$(mktemp -d -t cohort-lanes.XXXXXX)
lane actors --durations=20 -m "$RAY_TESTS" tests/actors
lane rest --durations=20 -m "$RAY_TESTS" --ignore=tests/actors
lane pure --durations=15 -m "not ray and not spark and not jvm"
wait
failed=""
for name in actors rest pure; do
  echo "================================ lane: $name ================================"
  cat "$lanes/$name.log"
  [ "$(cat "$lanes/$name.rc")" = 0 ] || failed="$failed $name"
done
rm -rf "$lanes"
if [ -n "$failed" ]; then
  echo "test.sh: lanes that failed:$failed" >&2
  exit 1
fi
# Cohort in front of real upstream brokers (tests/upstream): a Cohort with an upstream, so a
# Ray and a session of their own.
session upstream --durations=10 -o addopts="-ra --strict-markers" -m upstream tests/upstream
# Several Ray nodes on this machine (tests/multinode): their own Ray, so their own session.
session multinode --durations=10 -o addopts="-ra --strict-markers" -m multinode tests/multinode
