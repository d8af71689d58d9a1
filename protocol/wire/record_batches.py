"""Reading the record batches an upstream broker sends (v2, magic 2), pure.

In front of an upstream, Cohort reads real records in two ways, and this module serves both:

* **As batches, untouched** (``batch_spans``, ``covering``): a share-partition hands a client
  the upstream's batches that hold the offsets it acquired, as Kafka's share-partition leader
  does. Only each batch's header is read (base offset, length, last offset delta), never its
  records, so compressed batches pass as they came; the client keeps the records of its
  acquired ranges and acknowledges the rest of a range (control records, offsets compacted
  away) as gaps.
* **As records** (``decode``): a Ray consumer actor hands the records to a user function, with
  their keys, values, headers and timestamps. Control batches (transaction markers) hold no
  records for a consumer and are skipped; uncompressed and gzip batches are read here, other
  codecs (snappy, lz4, zstd: libraries Cohort does not depend on) are refused by name.

A fetch reply may end with a batch cut short (the broker fills its byte limit); that batch is
left out, as every client leaves it out, and read again by the next fetch.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_HEAD = struct.Struct(">qi")  # base offset, batch length (bytes after this field)
HEAD_BYTES = _HEAD.size
# From the batch length on: partition leader epoch, magic, crc, attributes, last offset delta,
# base timestamp, max timestamp, producer id, producer epoch, base sequence, record count.
_BODY = struct.Struct(">ibIhiqqqhii")
BATCH_OVERHEAD = HEAD_BYTES + _BODY.size
MAGIC = 2
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class RecordBatchError(ValueError):
    """Bytes that are not a record batch Cohort can read (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """Where one whole batch lies in a fetch reply's records, and the offsets it holds."""

    base_offset: int
    last_offset: int
    start: int  # byte position of the batch in the records
    end: int  # one past its last byte
    attributes: int
    magic: int

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def codec(self) -> str:
        return CODECS.get(self.attributes & COMPRESSION_MASK, "unknown")


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """One record as a Ray consumer's function gets it (Kafka's ``ConsumerRecord``)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# ----------------------------------------------------------------------------- batches


def batch_spans(records: bytes | None) -> list[BatchSpan]:
    """The whole batches in ``records`` (a fetch reply partition's bytes), in order; a cut-short
    batch at the end is left out. ``RecordBatchError`` for a length no batch has."""
    spans: list[BatchSpan] = []
    data = records or b""
    pos = 0
    while pos + BATCH_OVERHEAD <= len(data):
        base_offset, length = _HEAD.unpack_from(data, pos)
        end = pos + HEAD_BYTES + length
        if length < _BODY.size:
            raise RecordBatchError(f"a batch at offset {base_offset} claims {length} bytes")
        if end > len(data):
            break  # cut short by the broker's byte limit: the next fetch reads it whole
        _, magic, _, attributes, last_delta = struct.unpack_from(">ibIhi", data, pos + HEAD_BYTES)
        if magic != MAGIC:
            raise RecordBatchError(f"a batch at offset {base_offset} is magic {magic}; "
                                   "Cohort reads magic 2 (Kafka 0.11+) only")
        spans.append(BatchSpan(base_offset, base_offset + last_delta, pos, end, attributes,
                               magic))
        pos = end
    return spans


def covering(records: bytes | None, ranges: Iterable[tuple[int, int]]) -> bytes:
    """The whole batches of ``records`` that hold any offset of ``ranges`` ((first, last),
    inclusive), joined as they came: what a share consumer gets for its acquired ranges."""
    wanted = sorted(ranges)
    data = records or b""
    return b"".join(
        data[s.start:s.end] for s in batch_spans(data)
        if any(first <= s.last_offset and s.base_offset <= last for first, last in wanted))


def reach(records: bytes | None) -> int | None:
    """One past the last offset the whole batches of ``records`` hold (where a next fetch
    starts), or None when there is no whole batch."""
    spans = batch_spans(records)
    return spans[-1].last_offset + 1 if spans else None


# ----------------------------------------------------------------------------- records


def decode(records: bytes | None, topic: str, partition: int,
           from_offset: int = 0) -> list[ConsumerRecord]:
    """The records of ``records`` at or past ``from_offset``, control batches skipped.
    ``RecordBatchError`` for a codec other than none and gzip, or a batch that does not
    parse (its CRC is not checked: the broker checked it, and TCP carried it)."""
    data = records or b""
    out: list[ConsumerRecord] = []
    for span in batch_spans(data):
        if span.is_control or span.last_offset < from_offset:
            continue
        (*_, base_ts, _, _, _, _, count) = _BODY.unpack_from(
            data, span.start + HEAD_BYTES)
        body = _inflate(data[span.start + BATCH_OVERHEAD:span.end], span)
        for rec in _records(body, count, span, base_ts):
            if rec[0] >= from_offset:
                out.append(ConsumerRecord(topic, partition, *rec))
    return out


def _inflate(body: bytes, span: BatchSpan) -> bytes:
    codec = span.codec
    if codec == "none":
        return body
    if codec == "gzip":
        return zlib.decompress(body, wbits=16 + zlib.MAX_WBITS)
    raise RecordBatchError(
        f"the batch at offset {span.base_offset} is compressed with {codec}; Cohort's Ray "
        "consumers read uncompressed and gzip batches (produce with compression.type=gzip "
        "or none)")


def _records(body: bytes, count: int, span: BatchSpan, base_ts: int) -> Sequence[tuple]:
    out = []
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(body, pos)
            end = pos + length
            pos += 1  # record attributes (unused)
            ts_delta, pos = _varint(body, pos)
            offset_delta, pos = _varint(body, pos)
            key, pos = _bytes(body, pos)
            value, pos = _bytes(body, pos)
            n_headers, pos = _varint(body, pos)
            headers = []
            for _ in range(n_headers):
                name, pos = _bytes(body, pos)
                hval, pos = _bytes(body, pos)
                headers.append(((name or b"").decode("utf-8", "replace"), hval))
            if pos != end:
                raise RecordBatchError("a record's length does not match its fields")
            out.append((span.base_offset + offset_delta, base_ts + ts_delta, key, value,
                        tuple(headers)))
    except (IndexError, struct.error) as e:
        raise RecordBatchError(f"the batch at offset {span.base_offset} is cut short: {e}") \
            from None
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Kafka's zigzag varint at ``pos``: (value, position after it)."""
    shift = raw = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise RecordBatchError("a varint longer than 10 bytes")


def _bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(data, pos)
    if n < 0:
        return None, pos
    if pos + n > len(data):
        raise IndexError("a field runs past its record")
    return bytes(data[pos:pos + n]), pos + n
