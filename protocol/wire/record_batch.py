"""Kafka's v2 record batch (magic 2), written from scratch for the synthetic stream.

One batch per fetched partition: uncompressed, no producer id, no headers, the record's key
null and its value the decimal offset ("offset n is the n-th record", readable by eye in any
consumer). The CRC is CRC-32C over everything after the CRC field, as Kafka checks it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache

import crc32c

_MAGIC_CRC = struct.Struct(">bI")
_BODY = struct.Struct(">hiqqqhii")  # attributes .. record count
MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
_NULL_KEY = b"\x01"  # zigzag(-1)
_NO_HEADERS = b"\x00"  # zigzag(0)


def zigzag_varint(n: int) -> bytes:
    """Kafka's signed varint: zigzag, then 7 bits a byte, low bits first."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# The varints a batch repeats (small deltas and lengths), each encoded once.
_small_varint = lru_cache(maxsize=1 << 16)(zigzag_varint)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes) -> bytes:
    varint = _small_varint
    key_part = _NULL_KEY if key is None else varint(len(key)) + key
    body = b"".join((b"\x00", varint(timestamp_delta), varint(offset_delta), key_part,
                     varint(len(value)), value, _NO_HEADERS))  # attributes first
    return varint(len(body)) + body


def record_batch(base_offset: int, timestamps_ms: Sequence[int],
                 values: Sequence[bytes], leader_epoch: int = 0) -> bytes:
    """One batch holding ``values`` at offsets ``base_offset, base_offset+1, ...``."""
    if not values or len(values) != len(timestamps_ms):
        raise ValueError("a batch needs at least one record and one timestamp per record")
    base_ts = timestamps_ms[0]
    records = b"".join(
        _record(i, ts - base_ts, None, v)
        for i, (ts, v) in enumerate(zip(timestamps_ms, values, strict=True))
    )
    body = _BODY.pack(0, len(values) - 1, base_ts, max(timestamps_ms), NO_PRODUCER_ID,
                      NO_PRODUCER_EPOCH, NO_SEQUENCE, len(values)) + records
    crc = crc32c.crc32c(body)
    after_length = struct.pack(">i", leader_epoch) + _MAGIC_CRC.pack(MAGIC, crc) + body
    return struct.pack(">qi", base_offset, len(after_length)) + after_length
