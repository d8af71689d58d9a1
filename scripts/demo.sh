#!/usr/bin/env bash
# Set everything up and run the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
exec cohort demo "$@"
