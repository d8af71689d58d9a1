"""Reading a log file's frames back: where whole, checked frames end and why reading stopped.

Kept apart from ``log`` (the writer's side and the segment bookkeeping) because reading is
what a load, a recovery and a torn-write check all share, and it needs nothing of the log's
state. Frame: 4-byte big-endian payload length, 4-byte big-endian CRC32C of the payload,
payload = msgpack list of record bytes.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import crc32c
import msgpack

FRAME_HEADER_BYTES = 8  # payload length (u32 BE) + CRC32C of the payload (u32 BE)
MAX_BATCH_BYTES = 256 * 1024 * 1024  # largest payload written; a longer length on disk is damage
FRAME_HEADER = struct.Struct(">II")
# A payload is a msgpack array: its first byte is a fixarray, array16 or array32 marker. A
# frame can only start 8 bytes before one of these, which keeps the search for a valid frame
# after damage (``is_torn_tail``) from checking a CRC at every byte.
_ARRAY_MARKER = re.compile(rb"[\x90-\x9f\xdc\xdd]")


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


def is_torn_tail(path: Path, offset: int) -> bool:
    """Whether the bytes of ``path`` from ``offset`` (where ``scan_frames`` stopped) can be the
    residue of a crash in the middle of the last append, and nothing else.

    An append is one write of one frame, fsynced before it is acknowledged, so what a crash
    leaves past the last whole frame is a prefix of one frame: fewer bytes than its header, or
    a header whose payload runs past the end of the file; or zeros (a file system that grew
    the file but never wrote the block). Anything else is damage to acknowledged bytes: a
    whole frame whose CRC or payload is wrong, an impossible length, or any valid frame
    further on (a damaged length that points past the end of the file would otherwise hide
    every frame after it); so is a frame that runs past the end only because its length is
    damaged (its CRC matches the bytes up to the end).
    """
    with open(path, "rb") as f:
        f.seek(offset)
        tail = f.read()
    if not tail.strip(b"\0"):
        return True  # nothing, or only zeros: no frame has a zero length
    if len(tail) < FRAME_HEADER_BYTES:
        return True
    length, crc = FRAME_HEADER.unpack_from(tail)
    if length == 0 or length > MAX_BATCH_BYTES:
        return False
    if FRAME_HEADER_BYTES + length <= len(tail):
        return False  # a whole frame that failed its checks
    if crc32c.crc32c(tail[FRAME_HEADER_BYTES:]) == crc:
        return False  # the frame is all there: its length is what is damaged
    return find_frame(tail, start=1) is None


def find_frame(data: bytes, start: int = 0) -> int | None:
    """The first position at or after ``start`` where a whole valid frame begins, or None."""
    view = memoryview(data)
    for marker in _ARRAY_MARKER.finditer(data, start + FRAME_HEADER_BYTES):
        at = marker.start() - FRAME_HEADER_BYTES
        length, crc = FRAME_HEADER.unpack_from(view, at)
        end = marker.start() + length
        if 0 < length <= MAX_BATCH_BYTES and end <= len(data):
            payload = view[marker.start():end]
            if crc32c.crc32c(payload) == crc and _decode_payload(bytes(payload)) is not None:
                return at
    return None
