"""Zombie fencing at the log: once a newer incarnation has opened a partition's log, nothing
the older one tries to write reaches it, and whatever the older one wrote before is what the
newer one loaded."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from actors.runtime.log import LogFencedError, PartitionLog


def opened(directory: Path) -> PartitionLog:
    log = PartitionLog(directory, fsync=True)
    log.load()
    return log


def reloaded_batches(directory: Path) -> list[list[bytes]]:
    log = PartitionLog(directory, fsync=False)
    loaded = log.load()
    log.close()
    return loaded.batches


def test_each_opening_takes_a_newer_epoch(tmp_path: Path) -> None:
    old = opened(tmp_path)
    new = opened(tmp_path)
    assert new.epoch == old.epoch + 1
    new.check_fence()
    with pytest.raises(LogFencedError):
        old.check_fence()


def test_the_older_writers_append_is_refused_and_never_reaches_the_log(tmp_path: Path) -> None:
    old = opened(tmp_path)
    old.append([b"acknowledged by the old"])
    new = opened(tmp_path)

    with pytest.raises(LogFencedError):
        old.append([b"zombie"])
    new.append([b"acknowledged by the new"])
    with pytest.raises(LogFencedError):
        old.append([b"zombie again"])
    old.close()
    new.close()

    assert reloaded_batches(tmp_path) == [
        [b"acknowledged by the old"],
        [b"acknowledged by the new"],
    ]


def test_the_older_writers_snapshot_is_refused_and_deletes_nothing(tmp_path: Path) -> None:
    old = opened(tmp_path)
    old.append([b"a"])
    new = opened(tmp_path)
    new.append([b"b"])

    with pytest.raises(LogFencedError):
        old.write_snapshot([b"zombie state"])
    new.close()

    assert not list(tmp_path.glob("*.snap*"))
    assert reloaded_batches(tmp_path) == [[b"a"], [b"b"]]


def test_a_fenced_writer_cannot_recover_its_way_back(tmp_path: Path) -> None:
    old = opened(tmp_path)
    new = opened(tmp_path)
    new.append([b"b"])
    with pytest.raises(LogFencedError):
        old.recover()
    with pytest.raises(LogFencedError):
        old.append([b"zombie"])
    new.close()
    assert reloaded_batches(tmp_path) == [[b"b"]]


def test_a_writer_racing_a_new_opening_lands_before_it_or_not_at_all(tmp_path: Path) -> None:
    """A zombie appends as fast as it can while a new incarnation opens the log: everything
    the zombie got acknowledged is in what the new one loaded, nothing after that point is."""
    old = opened(tmp_path)
    acknowledged: list[bytes] = []
    refused = threading.Event()
    started = threading.Event()

    def zombie() -> None:
        n = 0
        while True:
            record = f"z{n}".encode()
            try:
                old.append([record])
            except LogFencedError:
                refused.set()
                return
            acknowledged.append(record)
            n += 1
            if n == 20:
                started.set()

    thread = threading.Thread(target=zombie)
    thread.start()
    assert started.wait(30)
    new = PartitionLog(tmp_path, fsync=True)
    loaded = new.load()
    thread.join(30)
    assert refused.is_set()
    new.append([b"new"])
    new.close()
    old.close()

    assert [b[0] for b in loaded.batches] == acknowledged
    assert [b[0] for b in reloaded_batches(tmp_path)] == [*acknowledged, b"new"]
