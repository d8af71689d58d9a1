"""The storage marker: which Cohort a storage root belongs to, so that no partition serves an
empty coordinator from storage that is not Cohort's.

``Cluster.start`` (and so ``cohort start``) first checks that an object store honours
put-if-absent (``probe_put_if_absent``: without it fencing would be silently off), then writes
``cohort.json`` at the root of ``storage_path`` (a local directory or ``s3://bucket/prefix``)
with put-if-absent, holding a new cluster id; a marker already there is adopted (a restart of
the same Cohort). The Controller and every partition are given the id, and before loading
their log they read the marker: none (a node that cannot see the directory the cluster was
started on, a mistyped prefix) or another Cohort's id is refused for good with
``StorageMarkerError`` (the partition then answers COORDINATOR_NOT_AVAILABLE and ``info()``
says why), where an unreachable store is an ``OSError``, retried as any storage failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterable

from obstore.store import ObjectStore

from actors.runtime.object_slots import (
    AlreadyExistsError,
    ObjectOps,
    is_url,
    local_store,
    open_store,
)
from actors.runtime.storage import LoadedLog, PartitionStorage

MARKER = "cohort.json"
PROBE_PREFIX = "cohort-probe/"  # a key per probe, removed after it


class StorageMarkerError(RuntimeError):
    """The storage has no Cohort marker, or another Cohort's: refuse to serve from it."""


def normalize_storage_path(storage_path: str) -> str:
    """A URL as it is; a local path made absolute (actors may run in another directory)."""
    return storage_path.rstrip("/") if is_url(storage_path) else os.path.abspath(storage_path)


def marker_store(storage_path: str) -> ObjectStore:
    return open_store(storage_path) if is_url(storage_path) else local_store(storage_path)


def _where(storage_path: str) -> str:
    return f"{storage_path.rstrip('/')}/{MARKER}"


def claim_marker(storage_path: str, ops: ObjectOps | None = None) -> str:
    """The cluster id of ``storage_path``'s marker, written now (put-if-absent) if there is
    none; ``StorageMarkerError`` with the reason when the storage cannot be reached or
    written (bad URL, no such bucket, wrong credentials, endpoint down)."""
    ops = ops or ObjectOps()
    try:
        store = marker_store(storage_path)
        if is_url(storage_path):
            probe_put_if_absent(storage_path, store, ops)
        data = json.dumps({"cluster_id": uuid.uuid4().hex, "format": 1}).encode()
        with contextlib.suppress(AlreadyExistsError):  # there already: adopted
            ops.put(store, MARKER, data, create=True)
        return read_marker(storage_path, store, ops)
    except (OSError, ValueError) as e:
        raise StorageMarkerError(
            f"cannot use storage {storage_path!r}: {e}. For s3:// check AWS_ENDPOINT_URL, "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP=true for a "
            "plain http endpoint, and that the bucket exists"
        ) from None


def probe_put_if_absent(storage_path: str, store: ObjectStore, ops: ObjectOps) -> None:
    """``StorageMarkerError`` unless the store refuses a second put-if-absent of one key.

    Fencing a zombie partition rests on it (``object_log``: its next slot is a put-if-absent
    that a newer incarnation's fence makes fail). An S3-compatible store that ignores
    ``If-None-Match: *`` would let both write, silently; so a new key is created twice at
    start, and the second must fail."""
    key = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
    ops.put(store, key, b"first", create=True)
    try:
        ops.put(store, key, b"second", create=True)
    except AlreadyExistsError:
        return
    finally:
        with contextlib.suppress(OSError):
            ops.delete(store, [key])
    raise StorageMarkerError(
        f"storage {storage_path!r} does not honour put-if-absent (If-None-Match: *): a second "
        f"create of {key} succeeded. Cohort fences a stale partition with it, so fencing "
        "would be silently off; refusing to start. Use a store that supports conditional "
        "writes (AWS S3, GCS, Azure, R2, MinIO, SeaweedFS)"
    )


def read_marker(storage_path: str, store: ObjectStore | None = None,
                ops: ObjectOps | None = None) -> str:
    """The cluster id in the marker; ``FileNotFoundError`` when there is none, ``OSError``
    when the store fails, ``StorageMarkerError`` when it is not a Cohort marker."""
    ops = ops or ObjectOps()
    data = ops.get(store if store is not None else marker_store(storage_path), MARKER)
    try:
        cluster_id = json.loads(data)["cluster_id"]
    except (ValueError, KeyError, TypeError):
        raise StorageMarkerError(f"{_where(storage_path)} is not a Cohort marker") from None
    if not isinstance(cluster_id, str):
        raise StorageMarkerError(f"{_where(storage_path)} is not a Cohort marker")
    return cluster_id


def check_marker(storage_path: str, cluster_id: str, ops: ObjectOps | None = None) -> None:
    """``StorageMarkerError`` unless ``storage_path`` holds the marker of ``cluster_id``."""
    try:
        found = read_marker(storage_path, ops=ops)
    except FileNotFoundError:
        raise StorageMarkerError(
            f"{_where(storage_path)} is missing: this storage is not the one Cohort "
            f"{cluster_id} was started on (a local directory that this node cannot see?); "
            "refusing to serve an empty coordinator"
        ) from None
    if found != cluster_id:
        raise StorageMarkerError(
            f"{_where(storage_path)} belongs to Cohort {found}, not {cluster_id}; refusing "
            "to serve another Cohort's log"
        )


class MarkedStorage(PartitionStorage):
    """A storage whose ``load`` first checks the marker; everything else is the inner one's."""

    def __init__(self, inner: PartitionStorage, storage_path: str, cluster_id: str,
                 ops: ObjectOps | None = None) -> None:
        self.inner = inner
        self.storage_path = storage_path
        self.cluster_id = cluster_id
        self._ops = ops
        self.refusal: str | None = None  # why load refused, for info()

    @property
    def epoch(self) -> int | None:
        return self.inner.epoch

    @property
    def failed(self) -> bool:
        return self.inner.failed

    @property
    def bytes_since_snapshot(self) -> int:
        return self.inner.bytes_since_snapshot

    @property
    def quick_append_bytes(self) -> int:
        return self.inner.quick_append_bytes

    @property
    def fence_check_interval_s(self) -> float:
        return self.inner.fence_check_interval_s

    def load(self) -> LoadedLog:
        try:
            check_marker(self.storage_path, self.cluster_id, self._ops)
        except StorageMarkerError as e:
            self.refusal = str(e)
            raise
        return self.inner.load()

    def recover(self) -> LoadedLog:
        return self.inner.recover()

    def append(self, records: list[bytes]) -> None:
        self.inner.append(records)

    def check_fence(self) -> None:
        self.inner.check_fence()

    def write_snapshot(self, records: Iterable[bytes]) -> None:
        self.inner.write_snapshot(records)

    def close(self) -> None:
        self.inner.close()
