"""The upstream's Metadata reply with Cohort's listeners as its brokers, its topics left as
they came: read as far as the end of the broker list, the rest copied, never decoded.

In front of an upstream, Cohort answers Metadata with the upstream's answer re-addressed
(``rewrite_body``). Decoding and writing again a reply for a topic of 1,000 partitions took
~60 ms of the gateway's loop in kio, and 1,000 consumers joining one group ask it several
times a second (bench/upstream.py --stable: half the gateway's time, with the replies kept).
Only the broker list names addresses, and it comes before the topics in every version, so
only it is rewritten: the same bytes ``rewrite_body`` and kio would write (a property test
holds the two equal).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from protocol.wire.primitives import (
    INT32,
    compact_array_count,
    compact_nullable_string,
    compact_string,
    legacy_array_count,
    legacy_nullable_string,
    legacy_string,
    put_compact_array_length,
    put_compact_string,
    put_legacy_array_length,
    put_legacy_string,
)
from protocol.wire.upstream import ListenerOf, UpstreamReplyError, _skip_tags

# Metadata's first flexible version, and the versions adding the fields before the topics.
FLEXIBLE_FROM, THROTTLE_FROM, RACK_FROM = 9, 3, 1


def renamed_metadata(version: int, frame: bytes, listener_of: ListenerOf,
                     extra_brokers: Iterable[tuple[int, str, int]] = ()) -> list[bytes]:
    """The body of the Metadata reply ``frame`` (size prefix excluded, its header skipped) in
    pieces: its brokers named by ``listener_of`` (a node without a listener left out) and
    ``extra_brokers`` (Cohort's coordinators) added, then the rest as the upstream wrote it."""
    flexible = version >= FLEXIBLE_FROM
    try:
        pos = _skip_tags(frame, 4) if flexible else 4  # past the correlation id
        start = pos
        if version >= THROTTLE_FROM:
            pos += 4
        head = bytearray(frame[start:pos])
        count, pos = (compact_array_count if flexible else legacy_array_count)(frame, pos)
        brokers: list[tuple[int, str, int, str | None]] = []
        for _ in range(count):
            (node_id,) = INT32.unpack_from(frame, pos)
            host, pos = (compact_string if flexible else legacy_string)(frame, pos + 4)
            (port,) = INT32.unpack_from(frame, pos)
            pos += 4
            rack = None
            if version >= RACK_FROM:
                rack, pos = (compact_nullable_string if flexible else legacy_nullable_string)(
                    frame, pos)
            if flexible:
                pos = _skip_tags(frame, pos)
            where = listener_of(node_id)
            if where is not None:
                brokers.append((node_id, where[0], where[1], rack))
    except (ValueError, IndexError, struct.error) as e:  # BadBody, a cut frame
        raise UpstreamReplyError(f"cannot read the upstream's Metadata v{version} brokers: "
                                 f"{e}") from None
    brokers += [(n, h, p, None) for n, h, p in extra_brokers]
    (put_compact_array_length if flexible else put_legacy_array_length)(head, len(brokers))
    put = put_compact_string if flexible else put_legacy_string
    for node_id, host, port, rack in brokers:
        head += INT32.pack(node_id)
        put(head, host)
        head += INT32.pack(port)
        if version >= RACK_FROM:
            put(head, rack)
        if flexible:
            head.append(0)
    return [bytes(head), frame[pos:]]
