#!/usr/bin/env bash
# One-time (idempotent) setup: Java for Spark when missing, a .venv, Cohort and its pinned
# dependencies, and the reference broker's jars (Apache Kafka, pinned in java/pom.xml) in a
# cache outside the repository. Every other script calls this first, so a fresh clone needs
# nothing else.
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

# The reference broker (DESIGN.md, "The reference broker"): Apache Kafka's jars, pinned in
# java/pom.xml, copied by Maven into a cache outside the repository (never into git), and the
# Java sources under java/src built there too. Skipped while the stamp in the cache matches the
# pom and the sources; actors/tools/reference_kafka.py reads the same folder.
if ! command -v mvn >/dev/null 2>&1; then
  echo "setup: installing Maven (it fetches the reference broker's jars)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq maven >/dev/null
fi
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' java/pom.xml)
kafka_cache="${COHORT_CACHE:-$HOME/.cache/cohort}/kafka-$kafka_version"
kafka_stamp="$kafka_cache/.stamp"
# What the cache was built from: the pom and every Java source, by content.
kafka_hash=$(bash scripts/java_hash.sh)
if [ ! -f "$kafka_stamp" ] || [ "$(cat "$kafka_stamp")" != "$kafka_hash" ]; then
  echo "setup: fetching Apache Kafka $kafka_version's jars into $kafka_cache/lib (Maven)"
  mkdir -p "$kafka_cache"
  rm -rf "$kafka_cache/lib.new"
  mvn_log="$kafka_cache/mvn.log"
  mvn_cmd=(mvn -B -q -Dstyle.color=never -f java/pom.xml "-Dcohort.build.dir=$kafka_cache/build")
  goals=(dependency:copy-dependencies "-DoutputDirectory=$kafka_cache/lib.new")
  # Java sources (clients, a Streams app) are built by the same call, into the cache.
  if [ -d java/src/main/java ]; then goals=(package "${goals[@]}"); fi
  if ! "${mvn_cmd[@]}" "${goals[@]}" >"$mvn_log" 2>&1; then
    tail -n 30 "$mvn_log" >&2
    echo "setup: Maven could not fetch or build the reference broker (Apache Kafka" \
         "$kafka_version, java/pom.xml). Failed command: ${mvn_cmd[*]} ${goals[*]}" \
         "(full output in $mvn_log). Maven Central must be reachable, or the jars already" \
         "in ~/.m2." >&2
    exit 1
  fi
  # Swap the folder whole: a pom that drops a jar leaves no stale copy behind.
  rm -rf "$kafka_cache/lib"
  mv "$kafka_cache/lib.new" "$kafka_cache/lib"
  echo "$kafka_hash" >"$kafka_stamp"
fi
