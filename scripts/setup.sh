#!/usr/bin/env bash
# One-time (idempotent) setup: Java for Spark when missing, a .venv, Cohort and its pinned
# dependencies. Every other script calls this first, so a fresh clone needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "setup: installing Java 17 (Spark, through RayDP, needs it)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python_bin --version)"
  "$python_bin" -m venv .venv
fi
# Reinstall only when pyproject.toml changed since the last successful install.
stamp=.venv/.cohort-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing cohort and its pinned dependencies"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  touch "$stamp"
fi
