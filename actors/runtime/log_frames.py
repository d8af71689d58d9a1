"""Reading a log file's frames back: where whole, checked frames end and why reading stopped.

Kept apart from ``log`` (the writer's side and the segment bookkeeping) because reading is
what a load, a recovery and a torn-write check all share, and it needs nothing of the log's
state. Frame: 4-byte big-endian payload length, 4-byte big-endian CRC32C of the payload,
payload = msgpack list of record bytes.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import msgpack

FRAME_HEADER_BYTES = 8  # payload length (u32 BE) + CRC32C of the payload (u32 BE)
MAX_BATCH_BYTES = 256 * 1024 * 1024  # largest payload written; a longer length on disk is damage
FRAME_HEADER = struct.Struct(">II")


def _decode_payload(payload: bytes) -> list[bytes] | None:
    try:
        records = msgpack.unpackb(payload, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if not isinstance(records, list) or not set(map(type, records)) <= {bytes}:
        return None
    return records


def scan_frames(path: Path) -> tuple[list[list[bytes]], int, str | None]:
    """Read whole frames from the start; returns them, where they end, and why reading stopped
    early (None when the file ends exactly after a whole frame)."""
    batches: list[list[bytes]] = []
    offset = 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        while offset < size:
            header = f.read(FRAME_HEADER_BYTES)
            if len(header) < FRAME_HEADER_BYTES:
                return batches, offset, "short frame header"
            length, crc = FRAME_HEADER.unpack(header)
            if length == 0 or length > MAX_BATCH_BYTES:
                return batches, offset, f"bad frame length {length}"
            if offset + FRAME_HEADER_BYTES + length > size:
                return batches, offset, "short frame"
            payload = f.read(length)
            if crc32c.crc32c(payload) != crc:
                return batches, offset, "CRC mismatch"
            records = _decode_payload(payload)
            if records is None:
                return batches, offset, "payload is not a msgpack list of bytes"
            batches.append(records)
            offset += FRAME_HEADER_BYTES + length
    return batches, offset, None
