#!/usr/bin/env bash
# What the reference broker's cache is built from: java/pom.xml and every file under java/src,
# by content, as one sha256. scripts/setup.sh rebuilds the cache when it changes (and keeps it
# in the cache's .stamp); actors/tools/java_clients.py refuses a cache built from other sources.
set -euo pipefail
cd "$(dirname "$0")/.."
{ sha256sum java/pom.xml
  if [ -d java/src ]; then
    find java/src -type f -print0 | sort -z | xargs -0 -r sha256sum
  fi; } | sha256sum | cut -d' ' -f1
