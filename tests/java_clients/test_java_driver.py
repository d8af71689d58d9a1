"""The Java driver's jar is refused, with the command that builds it, when it is missing or
was built from other sources than java/ holds (``scripts/java_hash.sh``)."""

from __future__ import annotations

import re
import subprocess

import pytest

from actors.tools import java_clients
from actors.tools.reference_kafka import KAFKA_VERSION, KafkaJarsMissing


def _cache(tmp_path, stamp: str | None):
    cache = tmp_path / f"kafka-{KAFKA_VERSION}"
    (cache / "build").mkdir(parents=True)
    (cache / "lib").mkdir()
    for name in ("kafka_2.13", "kafka-tools", "kafka-clients"):
        (cache / "lib" / f"{name}-{KAFKA_VERSION}.jar").write_bytes(b"")
    if stamp is not None:
        (cache / ".stamp").write_text(stamp + "\n")
    return cache


def test_a_missing_driver_names_the_command_that_builds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("COHORT_CACHE", str(tmp_path))
    _cache(tmp_path, stamp=None)
    with pytest.raises(KafkaJarsMissing, match=re.escape("bash scripts/setup.sh")):
        java_clients.driver_classpath()


def test_a_driver_built_from_other_sources_is_refused_and_one_built_from_these_is_not(
        tmp_path, monkeypatch):
    monkeypatch.setenv("COHORT_CACHE", str(tmp_path))
    cache = _cache(tmp_path, stamp="0" * 64)
    (cache / "build" / java_clients.DRIVER_JAR).write_bytes(b"")
    with pytest.raises(KafkaJarsMissing, match="built from other sources"):
        java_clients.driver_classpath()
    now = subprocess.run(["bash", str(java_clients.JAVA_HASH)], capture_output=True,
                         text=True, check=True).stdout.strip()
    (cache / ".stamp").write_text(now + "\n")
    assert str(cache / "build") in java_clients.driver_classpath()
