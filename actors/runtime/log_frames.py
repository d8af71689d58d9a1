"""A log's frames: one turn's records as frames, and reading them back (where whole, checked
turns end and why reading stopped).

Kept apart from ``log`` (the writer's side and the segment bookkeeping) because it is what the
local log, the object-store log, a load, a recovery and a torn-write check all share, and it
needs nothing of a log's state. Frame: 4-byte big-endian payload length, 4-byte big-endian
CRC32C of the payload, payload = msgpack list of record bytes.

A turn is one batch, however large: past ``TURN_FRAME_BYTES`` its records are split across
frames written together (one write, one fsync, or one object), and every frame but the last
ends with the empty record ``CONTINUED`` (no encoded record is empty). Reading gives the turn
back as one batch only once its last frame is read: a crash in the middle of the write leaves
frames of an unfinished turn at the end of the log, which are the torn tail, never half a turn
applied (a handler's records apply all or none, invariant 6).
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
# A turn's records go in frames of about this much (and at most MAX_BATCH_BYTES each).
TURN_FRAME_BYTES = 16 * 1024 * 1024
CONTINUED = b""  # the last record of every frame of a turn but its last
_RECORD_OVERHEAD_BYTES = 5  # msgpack's bin32 header: what a record adds to a payload at most
# A payload is a msgpack array: its first byte is a fixarray, array16 or array32 marker. A
# frame can only start 8 bytes before one of these, which keeps the search for a valid frame
# after damage (``is_torn_tail``) from checking a CRC at every byte.
_ARRAY_MARKER = re.compile(rb"[\x90-\x9f\xdc\xdd]")


def encode_frame(records: list[bytes]) -> bytes:
    """One frame; refuses what load would later reject, so a bad record never reaches disk."""
    for record in records:
        if not isinstance(record, bytes):
            raise TypeError(f"a log record must be bytes, got {type(record).__name__}")
    payload = msgpack.packb(records, use_bin_type=True)
    if len(payload) > MAX_BATCH_BYTES:
        raise ValueError(f"batch of {len(payload)} bytes exceeds MAX_BATCH_BYTES={MAX_BATCH_BYTES}")
    return FRAME_HEADER.pack(len(payload), crc32c.crc32c(payload)) + payload


def encode_turn(records: list[bytes], frame_bytes: int | None = None) -> bytes:
    """One turn's records as frames of about ``frame_bytes`` (``TURN_FRAME_BYTES``), every one
    but the last marked ``CONTINUED``: read back as one batch, or not at all."""
    # Headroom under MAX_BATCH_BYTES for the array header and CONTINUED a payload adds.
    limit = min(TURN_FRAME_BYTES if frame_bytes is None else frame_bytes, MAX_BATCH_BYTES - 16)
    frames: list[bytes] = []
    chunk: list[bytes] = []
    size = 0
    for record in records:
        if not isinstance(record, bytes) or not record:
            raise TypeError(f"a log record must be non-empty bytes, got {record!r:.40}")
        cost = len(record) + _RECORD_OVERHEAD_BYTES
        if chunk and size + cost > limit:
            frames.append(encode_frame([*chunk, CONTINUED]))
            chunk, size = [], 0
        chunk.append(record)
        size += cost
    frames.append(encode_frame(chunk))
    return b"".join(frames)


def _decode_payload(payload: bytes) -> list[bytes] | None:
    try:
        records = msgpack.unpackb(payload, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if not isinstance(records, list) or not set(map(type, records)) <= {bytes}:
        return None
    return records


def scan_frames(path: Path) -> tuple[list[list[bytes]], int, str | None]:
    """Read whole turns from the start; returns their batches, where the last whole turn ends,
    and why reading stopped early (None when the file ends exactly after a whole turn)."""
    batches: list[list[bytes]] = []
    pending: list[bytes] = []  # the records of a turn whose last frame is not read yet
    offset = end = 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        while offset < size:
            header = f.read(FRAME_HEADER_BYTES)
            if len(header) < FRAME_HEADER_BYTES:
                return batches, end, "short frame header"
            length, crc = FRAME_HEADER.unpack(header)
            if length == 0 or length > MAX_BATCH_BYTES:
                return batches, end, f"bad frame length {length}"
            if offset + FRAME_HEADER_BYTES + length > size:
                return batches, end, "short frame"
            payload = f.read(length)
            if crc32c.crc32c(payload) != crc:
                return batches, end, "CRC mismatch"
            records = _decode_payload(payload)
            if records is None:
                return batches, end, "payload is not a msgpack list of bytes"
            offset += FRAME_HEADER_BYTES + length
            if records and records[-1] == CONTINUED:
                pending += records[:-1]
                continue
            batches.append(pending + records if pending else records)
            pending, end = [], offset
    return batches, end, ("a turn whose last frame is missing" if pending else None)


def is_torn_tail(path: Path, offset: int) -> bool:
    """Whether the bytes of ``path`` from ``offset`` (where ``scan_frames`` stopped) can be the
    residue of a crash in the middle of the last append, and nothing else.

    An append is one write of one turn's frames, fsynced before it is acknowledged, so what a
    crash leaves past the last whole turn is whole frames of that turn (each marked
    ``CONTINUED``) and then a prefix of one frame: fewer bytes than its header, or a header
    whose payload runs past the end of the file; or zeros (a file system that grew the file but
    never wrote the block). Anything else is damage to acknowledged bytes: a
    whole frame whose CRC or payload is wrong, an impossible length, or any valid frame
    further on (a damaged length that points past the end of the file would otherwise hide
    every frame after it); so is a frame that runs past the end only because its length is
    damaged (its CRC matches the bytes up to the end).
    """
    with open(path, "rb") as f:
        f.seek(offset)
        tail = f.read()
    tail = tail[_continued_prefix(tail):]  # whole frames of the unfinished turn: torn too
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


def _continued_prefix(data: bytes) -> int:
    """How many bytes at the start of ``data`` are whole, valid frames marked ``CONTINUED``."""
    at = 0
    while at + FRAME_HEADER_BYTES <= len(data):
        length, crc = FRAME_HEADER.unpack_from(data, at)
        payload = data[at + FRAME_HEADER_BYTES:at + FRAME_HEADER_BYTES + length]
        if length == 0 or len(payload) != length or crc32c.crc32c(payload) != crc:
            break
        records = _decode_payload(payload)
        if not records or records[-1] != CONTINUED:
            break
        at += FRAME_HEADER_BYTES + length
    return at


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
