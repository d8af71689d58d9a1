"""What an object-store log asks of its store before trusting it: a ``file://`` slot is on the
disk (file and directory entry) before the append that wrote it returns, and a store that
ignores put-if-absent (fencing would be silently off) is refused at start, saying why."""

from __future__ import annotations

import os
from pathlib import Path

import obstore
import pytest

from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import ObjectOps, open_store
from actors.runtime.storage_marker import PROBE_PREFIX, StorageMarkerError, claim_marker


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of every file descriptor this process fsyncs while the test runs."""
    paths: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return paths


def test_a_file_slot_and_its_directory_are_fsynced_before_the_append_returns(
    tmp_path: Path, fsynced: list[str]
) -> None:
    log = ObjectLog(open_store(f"file://{tmp_path}"), "offsets-0")
    log.load()  # claims slot 0 with a fence: a slot like any other
    slot_dir = tmp_path / "offsets-0" / "log"
    assert str(slot_dir / f"{0:020d}") in fsynced
    assert {str(slot_dir), str(tmp_path / "offsets-0"), str(tmp_path)} <= set(fsynced)

    fsynced.clear()
    log.append([b"acknowledged"])

    assert fsynced == [str(slot_dir / f"{1:020d}"), str(slot_dir)]


def test_a_file_snapshot_is_fsynced_before_its_marker_is_written(
    tmp_path: Path, fsynced: list[str]
) -> None:
    log = ObjectLog(open_store(f"file://{tmp_path}"), "offsets-0")
    log.load()
    log.append([b"a"])
    fsynced.clear()
    log.write_snapshot([b"a"])

    snapshot = next(p for p in fsynced if "/snapshot/" in p)
    marker = str(tmp_path / "offsets-0" / "log" / f"{2:020d}")
    assert fsynced.index(snapshot) < fsynced.index(marker)


class IgnoresPutIfAbsent(ObjectOps):
    """A store that drops ``If-None-Match: *`` (an S3 clone without conditional writes)."""

    def put(self, store, key, data, create):
        super().put(store, key, data, create=False)


def test_a_store_that_ignores_put_if_absent_refuses_to_start_naming_why() -> None:
    url = "memory://ignores-put-if-absent"
    with pytest.raises(StorageMarkerError, match="does not honour put-if-absent"):
        claim_marker(url, IgnoresPutIfAbsent())

    store = open_store(url)
    left = [m["path"] for chunk in obstore.list(store) for m in chunk]
    assert left == [], "refused before any marker; the probe key removed"


def test_a_store_that_honours_put_if_absent_starts_and_leaves_no_probe(tmp_path: Path) -> None:
    url = f"file://{tmp_path}"
    cluster_id = claim_marker(url)

    assert claim_marker(url) == cluster_id
    assert not any(p.is_file() for p in (tmp_path / PROBE_PREFIX.strip("/")).glob("*"))
