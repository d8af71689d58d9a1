"""Metadata (3) replies written fast: a topic's partitions from one template.

A Metadata reply for every topic lists every partition, and each partition's entry is the same
bytes but for its index (Cohort's listener leads them all, with one replica). Built as a dict
per partition and written through kio, a reply of 15,000 partitions (what a fuzzer's
CreateTopics leave after 200,000 frames) held a listener's event loop for 0.6-0.8 s; written
from a template, a few milliseconds. So:

* ``UniformPartitions`` is a topic's partition list as ``topics.metadata_response`` builds it:
  a sequence of the same dicts as before (anything that reads it sees them, made on demand),
  which this encoder writes from one entry's bytes with the index patched in;
* ``metadata`` writes a reply: the response and each topic through kio with an empty
  partition list, and the partitions spliced in where that empty list was. Any other
  partition list (a test's, a translation's) is written entry by entry through kio.

Issue 30 again: with 175 topics of 35,718 partitions left by a fuzzer, one reply for every topic
still took ~20 ms of a listener's loop, half of it a Python step per partition (the index
patched in), half kio writing each topic's own fields. So a topic's partitions are now the
template repeated by bytes multiplication and the index bytes laid in by extended-slice
assignment (C loops, no step per partition), and a topic's own bytes around its partitions are
kept (``_TOPIC_PARTS_KEPT`` of them, by value: the next reply under a new image reuses every
topic that did not change).

``tests/gateway/test_fast_metadata.py`` holds every version to kio's bytes (the oracle).
"""

from __future__ import annotations

import io
import struct
import sys
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_writer

from protocol.wire.entities import build
from protocol.wire.primitives import put_compact_array_length, put_legacy_array_length

METADATA = 3
_INDEX = struct.Struct(">i")
# A partition entry's index follows its int16 error code.
_INDEX_AT = 2
# A topic's written fields around its partitions, kept by value: a few hundred bytes each, so
# at most ~1 MiB whatever the topics (a fuzzer's names are up to 32 KiB: those are not kept).
_TOPIC_PARTS_KEPT = 4096
_TOPIC_PART_MOST_BYTES = 1024
# The big-endian indexes 0..n-1 are sliced from one array kept up to this many (4 bytes each).
_INDEXES_KEPT = 1 << 20


class UniformPartitions(Sequence):
    """Partitions 0..n-1 of a topic, each with ``fields`` (all but its index): a list of
    dicts to whoever reads it, one template to ``metadata``."""

    __slots__ = ("count", "fields")

    def __init__(self, count: int, fields: dict[str, Any]) -> None:
        self.count, self.fields = count, fields

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(i)
        return {"error_code": 0, "partition_index": i, **self.fields}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self.count))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # as a list's

    def __repr__(self) -> str:
        return f"UniformPartitions({self.count}, {self.fields!r})"


@cache
def _schema(version: int) -> tuple[type, type, type]:
    """Metadata's response, topic and partition entities at ``version`` (kio's: Cohort has
    no schema of its own for Metadata)."""
    response = load_response_schema(METADATA, version)
    topic = _field_type(response, "topics")
    return response, topic, _field_type(topic, "partitions")


def _field_type(entity: type, name: str) -> type:
    """The entity type an array field of ``entity`` holds (kio: ``tuple[T, ...]``)."""
    return entity.__dataclass_fields__[name].type.__args__[0]


def _written(entity_type: type, body: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    entity_writer(entity_type)(buf, build(entity_type, body))
    return buf.getvalue()


def _empty_array(flexible: bool) -> bytes:
    out = bytearray()
    (put_compact_array_length if flexible else put_legacy_array_length)(out, 0)
    return bytes(out)


def _split(written: bytes, tail: int, flexible: bool) -> tuple[bytes, bytes]:
    """``written`` (an entity whose last array is empty, followed by ``tail`` bytes of other
    fields and, when flexible, its tagged fields) cut around that empty array."""
    tail += 1 if flexible else 0
    empty = _empty_array(flexible)
    end = len(written) - tail
    assert written[end - len(empty):end] == empty, "not an empty array before the tail"
    return written[:end - len(empty)], written[end:]


def _response_tail(version: int) -> int:
    """Bytes of the response's fields after its topics: cluster_authorized_operations
    (v8-v10), error_code (v13+)."""
    return (4 if 8 <= version <= 10 else 0) + (2 if version >= 13 else 0)


def _topic_tail(version: int) -> int:
    """Bytes of a topic's fields after its partitions: topic_authorized_operations (v8+)."""
    return 4 if version >= 8 else 0


def metadata(out: bytearray, body: dict[str, Any], version: int) -> None:
    """Append Metadata's reply ``body`` in ``version`` to ``out``: kio's bytes."""
    response, topic_type, partition_type = _schema(version)
    flexible = response.__flexible__
    put_length = put_compact_array_length if flexible else put_legacy_array_length
    topics = body.get("topics") or []
    head, tail = _split(_written(response, {**body, "topics": []}), _response_tail(version),
                        flexible)
    out += head
    put_length(out, len(topics))
    for t in topics:
        partitions = t.get("partitions") or []
        before, after = _topic_parts(t, topic_type, version, flexible)
        out += before
        put_length(out, len(partitions))
        if isinstance(partitions, UniformPartitions):
            _uniform(out, partitions, partition_type)
        else:
            for p in partitions:
                out += _written(partition_type, p)
        out += after
    out += tail


_topic_parts_kept: OrderedDict[tuple, tuple[bytes, bytes]] = OrderedDict()


def _topic_parts(topic: dict[str, Any], topic_type: type, version: int,
                 flexible: bool) -> tuple[bytes, bytes]:
    """A topic entry's bytes before and after its partition list (which is left out), kept
    by the topic's other fields' values (``_TOPIC_PARTS_KEPT``, least recently used first
    out); a topic with an unhashable field, or a long one, is written each time."""
    try:
        key = (topic_type, *sorted((k, v) for k, v in topic.items() if k != "partitions"))
        parts = _topic_parts_kept.get(key)
    except TypeError:
        key = parts = None
    if parts is not None:
        _topic_parts_kept.move_to_end(key)
        return parts
    parts = _split(_written(topic_type, {**topic, "partitions": []}), _topic_tail(version),
                   flexible)
    if key is not None and len(parts[0]) + len(parts[1]) <= _TOPIC_PART_MOST_BYTES:
        _topic_parts_kept[key] = parts
        if len(_topic_parts_kept) > _TOPIC_PARTS_KEPT:
            _topic_parts_kept.popitem(last=False)
    return parts


@lru_cache(maxsize=64)
def _template(partition_type: type, fields: tuple) -> bytes:
    """One partition entry's bytes (index 0) with ``fields`` (sorted items, lists as
    tuples): the same for every partition of every topic a listener leads."""
    return _written(partition_type, {"error_code": 0, "partition_index": 0,
                                     **{k: list(v) if isinstance(v, tuple) else v
                                        for k, v in fields}})


_indexes = b""


def _indexes_to(n: int) -> bytes | memoryview:
    """The int32 big-endian indexes 0..n-1, back to back."""
    global _indexes
    if 4 * n <= len(_indexes):
        return memoryview(_indexes)[:4 * n]
    numbers = array("i", range(n))
    if sys.byteorder == "little":
        numbers.byteswap()
    written = numbers.tobytes()
    if n <= _INDEXES_KEPT:
        _indexes = written
    return written


def _uniform(out: bytearray, partitions: UniformPartitions, partition_type: type) -> None:
    """Append ``partitions`` written: the template ``count`` times, then each index's four
    bytes laid in at once (one extended-slice assignment per byte of the index)."""
    count = partitions.count
    if not count:
        return
    try:
        fields = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                              for k, v in partitions.fields.items()))
        template = _template(partition_type, fields)
    except TypeError:  # a field that cannot be a key: written as it is
        template = _written(partition_type, partitions[0])
    size = len(template)
    start = len(out)
    out += template * count
    indexes = _indexes_to(count)
    for byte in range(_INDEX.size):
        at = start + _INDEX_AT + byte
        out[at:at + size * (count - 1) + 1:size] = indexes[byte::_INDEX.size]
