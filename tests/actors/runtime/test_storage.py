"""The ``PartitionStorage`` contract, checked against every implementation alike.

The local log (``PartitionLog``) and the in-memory one (``MemoryStorage``) must answer the turn
logic the same way: what an append that returned wrote, every later load returns; a newer
incarnation fences the older (its writes raise ``LogFencedError`` and write nothing); a
snapshot replaces what it covers; after a failed append, ``recover`` reads back what was
durable and writes work again. The object-store log (``ObjectLog``) runs them on a real S3
endpoint (SeaweedFS, started by the ``seaweedfs`` fixture) and on obstore's ``MemoryStore``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from actors.runtime.log import PartitionLog
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import ObjectOps, open_store
from actors.runtime.storage import LoadedLog, LogFencedError, PartitionStorage
from tests.actors.runtime.faults import FlagFileFaults


class Local:
    """Incarnations of one local log directory; failures through a flag file."""

    def __init__(self, tmp_path: Path) -> None:
        self.directory, self.flag = tmp_path / "log", tmp_path / "fail"

    def open(self) -> PartitionStorage:
        return PartitionLog(self.directory, file_ops=FlagFileFaults(self.flag))

    def failing(self, on: bool) -> None:
        if on:
            self.flag.touch()
        else:
            self.flag.unlink()


class Memory:
    """Incarnations of one ``MemoryMedium``."""

    def __init__(self, tmp_path: Path) -> None:
        self.medium = MemoryMedium()

    def open(self) -> PartitionStorage:
        return MemoryStorage(self.medium)

    def failing(self, on: bool) -> None:
        self.medium.failing = on


class FailingOps(ObjectOps):
    """Store calls that raise ``OSError`` while ``failing`` is set (an endpoint down)."""

    def __init__(self) -> None:
        self.failing = False

    def _check(self) -> None:
        if self.failing:
            raise OSError("store unreachable (injected)")

    def put(self, store, key, data, create):
        self._check()
        super().put(store, key, data, create)

    def get(self, store, key):
        self._check()
        return super().get(store, key)

    def exists(self, store, key):
        self._check()
        return super().exists(store, key)

    def list(self, store, prefix):
        self._check()
        return super().list(store, prefix)


class ObjectMemory:
    """Incarnations of one ``ObjectLog`` in obstore's in-process ``MemoryStore``."""

    url = "memory://"

    def __init__(self, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> None:
        self.store = open_store(f"memory://{tmp_path.name}")
        self.ops = FailingOps()

    def open(self) -> PartitionStorage:
        return ObjectLog(self.store, "offsets-0", ops=self.ops)

    def failing(self, on: bool) -> None:
        self.ops.failing = on


class SeaweedFS(ObjectMemory):
    """Incarnations of one ``ObjectLog`` on a real S3 endpoint, a fresh prefix each."""

    def __init__(self, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> None:
        server = request.getfixturevalue("seaweedfs")
        from tests.object_store import aws_env

        with aws_env(server.env):
            self.store = open_store(server.url())
        self.ops = FailingOps()


STORAGES: list[Callable[..., Local | Memory | ObjectMemory]] = [
    Local, Memory, ObjectMemory, SeaweedFS,
]


def records(loaded: LoadedLog) -> list[bytes]:
    return [*loaded.snapshot, *(r for batch in loaded.batches for r in batch)]


@pytest.fixture(params=STORAGES, ids=lambda s: s.__name__)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Local | Memory | ObjectMemory:
    if issubclass(request.param, ObjectMemory):
        return request.param(tmp_path, request)
    return request.param(tmp_path)


def test_what_an_append_wrote_every_later_load_returns(storage):
    first = storage.open()
    assert records(first.load()) == []
    first.append([b"a", b"b"])
    first.append([])  # nothing to write: nothing written
    first.append([b"c"])
    assert records(storage.open().load()) == [b"a", b"b", b"c"]


def test_a_newer_incarnation_fences_the_older_which_writes_nothing(storage):
    old = storage.open()
    old.load()
    old.append([b"a"])
    new = storage.open()
    new.load()
    assert new.epoch > old.epoch
    with pytest.raises(LogFencedError):
        old.append([b"zombie"])
    with pytest.raises(LogFencedError):
        old.check_fence()
    new.check_fence()
    new.append([b"b"])
    assert records(storage.open().load()) == [b"a", b"b"]


def test_a_snapshot_replaces_what_it_covers(storage):
    log = storage.open()
    log.load()
    log.append([b"a=1"])
    log.append([b"a=2"])
    assert log.bytes_since_snapshot > 0
    log.write_snapshot([b"a=2"])
    assert log.bytes_since_snapshot == 0
    log.append([b"b=1"])
    loaded = storage.open().load()
    assert loaded.snapshot == [b"a=2"]
    assert records(loaded) == [b"a=2", b"b=1"]


def test_after_a_failed_append_recover_reads_back_what_was_durable(storage):
    log = storage.open()
    log.load()
    log.append([b"a"])
    storage.failing(True)
    with pytest.raises(OSError):
        log.append([b"lost"])
    assert log.failed
    with pytest.raises(OSError):
        log.recover()  # the medium still fails: still refused
    storage.failing(False)
    assert records(log.recover()) == [b"a"]
    assert not log.failed
    log.append([b"b"])
    assert records(storage.open().load()) == [b"a", b"b"]
