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
exit "$rc"
