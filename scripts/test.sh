#!/usr/bin/env bash
# Set everything up, lint, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

# One pytest session: "what" names it; exit code 5 (nothing collected) is a failure, not a
# pass.
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
# Lanes at once, each a chain of pytest sessions with a Ray of its own. The tests that need
# Ray, Spark or a JVM (the reference broker, the Java clients) mostly wait on sessions and
# timers, so they run as three lanes (the client actors of tests/actors, then Cohort in front
# of real upstreams; the rest of tests/actors; the other Ray/Spark/JVM tests, then
# tests/multinode's Ray nodes); the pure tests (no Ray, no JVM) keep the cores busy beside
# them as two more (tests/protocol, then the short chaos runs once it is done, as the third
# lane is the longest; and the others). Ray tests must hold with both cores busy: here they
# are. Each lane's report follows, in order.
RAY_TESTS="ray or spark or jvm"
PURE_TESTS="not ray and not spark and not jvm"
ALONE=(-o addopts="-ra --strict-markers")  # tests/upstream and tests/multinode: their own marks
on_clients() {
  local rc=0
  session clients --durations=15 -m "$RAY_TESTS" tests/actors/clients || rc=1
  session upstream --durations=10 "${ALONE[@]}" -m upstream tests/upstream || rc=1
  return "$rc"
}
on_actors() { session actors --durations=15 -m "$RAY_TESTS" tests/actors --ignore=tests/actors/clients; }
on_rest() {
  local rc=0
  session rest --durations=15 -m "$RAY_TESTS" --ignore=tests/actors --ignore=tests/chaos || rc=1
  session multinode --durations=10 "${ALONE[@]}" -m multinode tests/multinode || rc=1
  return "$rc"
}
on_protocol() {
  local rc=0
  session protocol --durations=10 -m "$PURE_TESTS" tests/protocol || rc=1
  session chaos --durations=5 -m "$RAY_TESTS" tests/chaos || rc=1
  return "$rc"
}
on_pure() { session pure --durations=10 -m "$PURE_TESTS" --ignore=tests/protocol; }
lanes=$(mktemp -d -t cohort-lanes.XXXXXX)
LANES=(clients actors rest protocol pure)
for name in "${LANES[@]}"; do  # each in the background, its report in a file
  ( rc=0
    PYTEST_ADDOPTS="-p no:cacheprovider" "on_$name" >"$lanes/$name.log" 2>&1 || rc=$?
    echo "$rc" >"$lanes/$name.rc" ) &
done
wait
failed=""
for name in "${LANES[@]}"; do
  echo "================================ lane: $name ================================"
  cat "$lanes/$name.log"
  [ "$(cat "$lanes/$name.rc")" = 0 ] || failed="$failed $name"
done
rm -rf "$lanes"
if [ -n "$failed" ]; then
  echo "test.sh: lanes that failed:$failed" >&2
  exit 1
fi
