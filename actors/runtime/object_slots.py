"""The object store under an ``ObjectLog``: opening one from a URL, the store calls it makes,
and the bytes of a slot.

A slot is one object of a partition's log, ``<name>/log/<seq:020d>``, written once with
put-if-absent and never changed: ``MAGIC``, a kind byte, the writer's epoch (u64 BE), then a
body. Kinds: ``FENCE`` (empty body: a new incarnation claimed this slot, so an older writer's
next put-if-absent of it fails), ``BATCH`` (one turn's records as one CRC32C frame, the local
log's frame format), ``MARKER`` (the body names the snapshot object that covers every slot
before this one). Snapshots are ``<name>/snapshot/<seq:020d>-<epoch:010d>``: frames of records.

``ObjectOps`` is the only code that calls obstore: it turns obstore's errors into the three
outcomes the log tells apart (``AlreadyExistsError``: the slot is taken; ``FileNotFoundError``;
``OSError``: the store failed, the write may or may not have landed), and tests subclass it to
inject failures.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from datetime import timedelta
from urllib.parse import urlparse

import crc32c
import msgpack
import obstore
from obstore import exceptions as oe
from obstore.store import LocalStore, MemoryStore, ObjectStore, from_url

from actors.runtime.log_frames import CONTINUED, FRAME_HEADER, FRAME_HEADER_BYTES, encode_turn

MAGIC = b"CSL1"
FENCE, BATCH, MARKER = b"F", b"B", b"M"
SLOT_HEADER = struct.Struct(">4scQ")  # magic, kind, epoch
SNAPSHOT_CHUNK_RECORDS = 65_536  # records per frame of a snapshot object
URL_SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "memory", "file")
# The AWS_* variables an actor needs to reach the store (passed on by Cluster.start).
AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
            "AWS_DEFAULT_REGION", "AWS_ALLOW_HTTP", "AWS_SESSION_TOKEN")
# An unreachable store fails a call within about this long (obstore's default is 3 minutes).
RETRY = {"max_retries": 4, "retry_timeout": timedelta(seconds=20),
         "backoff": {"init_backoff": timedelta(milliseconds=50),
                     "max_backoff": timedelta(seconds=2), "base": 2}}
CLIENT = {"connect_timeout": "5s", "timeout": "30s"}

AlreadyExistsError = oe.AlreadyExistsError
_MEMORY: dict[str, MemoryStore] = {}  # memory:// stores by URL, shared within one process


class SlotCorruptError(ValueError):
    """An object of the log does not hold what Cohort wrote."""


def is_url(storage_path: str) -> bool:
    """A storage URL (``s3://bucket/prefix``...) rather than a local directory."""
    return urlparse(storage_path).scheme in URL_SCHEMES


def open_store(url: str) -> ObjectStore:
    """The store at ``url``; an ``s3://`` one is configured from the ``AWS_*`` variables."""
    parsed = urlparse(url)
    if parsed.scheme == "memory":
        return _MEMORY.setdefault(url, MemoryStore())
    if parsed.scheme == "file":
        os.makedirs(parsed.path, exist_ok=True)
        return LocalStore(parsed.path)
    if not parsed.netloc:
        raise ValueError(f"storage URL {url!r} names no bucket (s3://bucket/prefix)")
    try:
        # Explicit client options replace the ones obstore reads from the environment.
        allow_http = os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("true", "1")
        client = {**CLIENT, "allow_http": allow_http}
        return from_url(url, retry_config=RETRY, client_options=client)
    except oe.BaseError as e:
        raise ValueError(f"storage URL {url!r}: {_first_line(e)}") from None


def local_store(directory: str) -> ObjectStore:
    """A local directory as a store (the storage marker of a local ``storage_path``)."""
    os.makedirs(directory, exist_ok=True)
    return LocalStore(directory)


def _fsync_path(path: str, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _first_line(error: BaseException) -> str:
    return str(error).split("\n", 1)[0][:300]


class ObjectOps:
    """The store calls of a log, with errors the log can tell apart (see the module doc)."""

    def put(self, store: ObjectStore, key: str, data: bytes, create: bool) -> None:
        try:
            obstore.put(store, key, data, mode="create" if create else "overwrite")
        except oe.AlreadyExistsError:
            raise
        except oe.BaseError as e:
            raise OSError(f"PUT {key}: {_first_line(e)}") from None
        if isinstance(store, LocalStore):
            self._sync_local(store, key)

    def _sync_local(self, store: LocalStore, key: str) -> None:
        """A ``file://`` store's PUT is a plain write and rename: nothing reaches the disk until
        the kernel flushes it. A slot is acknowledged once ``put`` returns, so it is made
        durable here, the file and then its directory entry (and, the first time, every
        directory up to the store's root and the root's own entry: the PUT or ``open_store``
        may have just created them)."""
        path = os.path.join(str(store.prefix), key)
        # local directories whose own entry is durable (set here: subclasses skip __init__)
        synced: set[str] = self.__dict__.setdefault("_synced_dirs", set())
        try:
            _fsync_path(path, os.O_RDONLY)
            directory = os.path.dirname(path)
            stop = os.path.dirname(os.path.normpath(str(store.prefix)))  # the root's parent
            while True:
                _fsync_path(directory, os.O_RDONLY | os.O_DIRECTORY)
                if directory in synced or os.path.normpath(directory) == stop:
                    break
                synced.add(directory)
                directory = os.path.dirname(directory)
        except OSError as e:
            raise OSError(f"PUT {key}: fsync failed: {e}") from None

    def get(self, store: ObjectStore, key: str) -> bytes:
        try:
            return bytes(obstore.get(store, key).bytes())
        except (FileNotFoundError, oe.NotFoundError):
            raise FileNotFoundError(key) from None
        except oe.BaseError as e:
            raise OSError(f"GET {key}: {_first_line(e)}") from None

    def exists(self, store: ObjectStore, key: str) -> bool:
        try:
            obstore.head(store, key)
            return True
        except (FileNotFoundError, oe.NotFoundError):
            return False
        except oe.BaseError as e:
            raise OSError(f"HEAD {key}: {_first_line(e)}") from None

    def list(self, store: ObjectStore, prefix: str) -> list[str]:
        try:
            return [meta["path"] for chunk in obstore.list(store, prefix) for meta in chunk]
        except (FileNotFoundError, oe.NotFoundError):
            return []
        except oe.BaseError as e:
            raise OSError(f"LIST {prefix}: {_first_line(e)}") from None

    def delete(self, store: ObjectStore, keys: list[str]) -> None:
        try:
            obstore.delete(store, keys)
        except (FileNotFoundError, oe.NotFoundError):
            pass
        except oe.BaseError as e:
            raise OSError(f"DELETE {len(keys)} objects: {_first_line(e)}") from None


# ----------------------------------------------------------------------------- bytes


def frame(records: list[bytes]) -> bytes:
    """One turn's records: the local log's frames (``log_frames.encode_turn``)."""
    return encode_turn(records)


def unframe(data: bytes, where: str, base: int = 0) -> list[list[bytes]]:
    """Every frame of ``data``; ``SlotCorruptError`` unless it is whole frames, CRCs right.
    ``base``: where ``data`` starts in its object, for the byte offsets errors name."""
    batches: list[list[bytes]] = []
    pending: list[bytes] = []  # a turn's records before its last frame
    view = memoryview(data)
    offset = 0
    while offset < len(data):
        at = base + offset
        if offset + FRAME_HEADER_BYTES > len(data):
            raise SlotCorruptError(f"{where}: short frame header at byte offset {at}")
        length, crc = FRAME_HEADER.unpack_from(view, offset)
        start = offset + FRAME_HEADER_BYTES
        payload = view[start:start + length]
        if len(payload) != length or crc32c.crc32c(payload) != crc:
            raise SlotCorruptError(f"{where}: bad frame at byte offset {at}")
        try:
            records = msgpack.unpackb(payload, raw=False)
        except (ValueError, TypeError, msgpack.UnpackException):
            records = None
        if not isinstance(records, list) or not set(map(type, records)) <= {bytes}:
            raise SlotCorruptError(f"{where}: a frame that is not a list of records at byte "
                                   f"offset {at}")
        offset = start + length
        if records and records[-1] == CONTINUED:  # a turn split across frames goes on
            pending += records[:-1]
            continue
        batches.append(pending + records if pending else records)
        pending = []
    if pending:
        raise SlotCorruptError(f"{where}: a turn whose last frame is missing at byte offset "
                               f"{base + len(data)}")
    return batches


def encode_slot(kind: bytes, epoch: int, body: bytes = b"") -> bytes:
    return SLOT_HEADER.pack(MAGIC, kind, epoch) + body


def decode_slot(data: bytes, where: str) -> tuple[bytes, int, bytes]:
    """(kind, epoch, body) of a slot object. The header has no CRC of its own, so the kind is
    checked against the body: a fence is empty, a batch is not (a batch whose kind byte was
    damaged into a fence must not read as a fence, silently dropping its records)."""
    if len(data) < SLOT_HEADER.size:
        raise SlotCorruptError(f"{where}: {len(data)} bytes at byte offset 0, shorter than a "
                               "slot header")
    magic, kind, epoch = SLOT_HEADER.unpack_from(data)
    if magic != MAGIC or kind not in (FENCE, BATCH, MARKER):
        raise SlotCorruptError(f"{where}: not a Cohort log slot (header at byte offset 0)")
    body = data[SLOT_HEADER.size:]
    if (kind == FENCE) != (not body):
        raise SlotCorruptError(f"{where}: a {'fence' if kind == FENCE else 'slot'} with "
                               f"{len(body)} bytes of body (kind byte at byte offset 4)")
    return kind, epoch, body


def snapshot_bytes(records: Iterable[bytes]) -> bytes:
    """A snapshot object: the records in frames of ``SNAPSHOT_CHUNK_RECORDS``."""
    out: list[bytes] = []
    chunk: list[bytes] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == SNAPSHOT_CHUNK_RECORDS:
            out.append(frame(chunk))
            chunk = []
    if chunk:
        out.append(frame(chunk))
    return b"".join(out)
