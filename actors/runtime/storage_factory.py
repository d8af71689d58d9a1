"""``open_storage``: the one place that turns a ``storage_path`` into a partition's storage.

A local path gives the local log (``PartitionLog`` under ``<storage_path>/<name>``); a URL
(``s3://bucket/prefix``, ``gs://``, ``az://``, ``file:///dir``, ``memory://``) gives an
``ObjectLog`` under ``<prefix>/<name>``. With a cluster id, the storage's ``load`` first checks
the storage marker (``storage_marker``). ``actor_runtime_env`` is what a coordinator actor
needs to reach the same store as the driver that starts it (the ``AWS_*`` variables).
"""

from __future__ import annotations

import os
from pathlib import Path

from actors.runtime.fileops import FileOps
from actors.runtime.log import PartitionLog
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import AWS_VARS, is_url, open_store
from actors.runtime.storage import PartitionStorage
from actors.runtime.storage_marker import MarkedStorage


def open_storage(storage_path: str, name: str, cluster_id: str | None = None,
                 file_ops: FileOps | None = None) -> PartitionStorage:
    """The storage of log ``name`` (``offsets-3``, ``controller``) under ``storage_path``."""
    storage: PartitionStorage
    if is_url(storage_path):
        storage = ObjectLog(open_store(storage_path), name)
    else:
        storage = PartitionLog(Path(storage_path) / name, file_ops=file_ops)
    if cluster_id is not None:
        storage = MarkedStorage(storage, storage_path, cluster_id)
    return storage


def actor_runtime_env(storage_path: str) -> dict | None:
    """The ``runtime_env`` that hands this process's ``AWS_*`` variables to an actor using
    ``storage_path`` (None for a local path: nothing to pass)."""
    if not is_url(storage_path):
        return None
    env = {k: os.environ[k] for k in AWS_VARS if k in os.environ}
    return {"env_vars": env} if env else None
