"""Per-request CPU of the hot group APIs, kio's path against the hand-written one (issue 23).

Run: ``python bench/wire_codec.py [--requests 5000] [--repeats 7]``. For each scenario (a
librdkafka-shaped frame of a hot API) it times, in this process and without Ray, what the
gateway and the partition spend per request:

* decode: ``decode_request_with_kio`` (kio for every API) against ``decode_request`` (the
  hand-written decoders, ``protocol/wire/fast_requests.py``);
* translate: the row's ``decode`` to the pure request (the same on both sides);
* shard: ``GroupCoordinatorShard.handle_batch(requests)``, every request type-checked, against
  ``handle_batch(requests, checked=ids)``, as the runtime calls it for requests the wire codec
  built (``typed=True``: one validation);
* encode: the row's ``encode`` (the same on both sides), then ``encode_response_with_kio``
  against ``encode_response``.

Every phase is the best of ``--repeats`` runs over ``--requests`` requests, in µs per request;
the ratio kio / hand-written is what to compare across machines. Both paths are checked to
give the same bodies and bytes before anything is timed.
"""

from __future__ import annotations

import argparse
import gc
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import messages as m
from protocol.api import BY_API_KEY
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.wire.codec import (
    decode_request,
    decode_request_with_kio,
    encode_response,
    encode_response_with_kio,
)
from protocol.wire.ids import topic_uuid
from protocol.wire.topics import TopicIndex

TOPIC = TopicMetadata("AAAAAAAAAAAAAAAAAAAAAQ", "orders", 64)
INDEX = TopicIndex([TOPIC])
MEMBERS = 50


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    """A flexible (header v2) request frame, as librdkafka writes it (client id "rdkafka")."""
    return struct.pack(">hhih", api_key, version, 7, 7) + b"rdkafka" + b"\x00" + body


def commit_frame(partitions: int) -> bytes:
    """OffsetCommit v9 of ``partitions`` partitions of one topic, by a simple consumer."""
    body = _cstr("g1") + struct.pack(">i", -1) + _cstr("") + _cstr(None)
    body += b"\x02" + _cstr(TOPIC.name) + bytes([partitions + 1])
    for p in range(partitions):
        body += struct.pack(">iqi", p, 1000 + p, -1) + _cstr("") + b"\x00"
    return _frame(8, 9, body + b"\x00" + b"\x00")


def fetch_frame() -> bytes:
    """OffsetFetch v9 of one group's one partition (what a consumer asks when it starts)."""
    body = b"\x02" + _cstr("g1") + _cstr(None) + struct.pack(">i", -1)
    body += b"\x02" + _cstr(TOPIC.name) + b"\x02" + struct.pack(">i", 0) + b"\x00" + b"\x00"
    return _frame(9, 9, body + b"\x01" + b"\x00")


def heartbeat_frame(member_id: str, epoch: int) -> bytes:
    """A steady ConsumerGroupHeartbeat v1: nothing changed, so every optional field null."""
    body = _cstr("g2") + _cstr(member_id) + struct.pack(">i", epoch) + b"\x00\x00"
    body += struct.pack(">i", -1) + b"\x00\x00\x00\x00"
    return _frame(68, 1, body + b"\x00")


def settled_group(shard: GroupCoordinatorShard, members: int) -> dict[str, int]:
    """``members`` consumers of group g2 joined and stable on ``shard``: their epochs."""
    state: dict[str, tuple[int, list]] = {}
    for i in range(members):
        r = shard.handle(m.ConsumerGroupHeartbeatRequest(
            group_id="g2", member_id=f"member-{i:03}", member_epoch=0,
            rebalance_timeout_ms=60_000, subscribed_topic_names=[TOPIC.name],
            topic_partitions=[])).response
        state[r.member_id] = (r.member_epoch, [])
    for _ in range(6):
        for mid, (epoch, owned) in list(state.items()):
            r = shard.handle(m.ConsumerGroupHeartbeatRequest(
                group_id="g2", member_id=mid, member_epoch=epoch, topic_partitions=owned)
            ).response
            if r.assignment is not None:
                owned = [m.TopicPartitions(tp.topic_id, list(tp.partitions))
                         for tp in r.assignment.assigned_topic_partitions]
            state[mid] = (r.member_epoch, owned)
    return {mid: epoch for mid, (epoch, _) in state.items()}


def _translate(api, decoded) -> object:
    if api.api_key == 68:
        return api.decode(decoded.body, INDEX, decoded.header.client_id, "127.0.0.1")
    if api.api_key == 9:
        (request,) = api.decode(decoded.body, decoded.header.api_version)
        return request
    return api.decode(decoded.body)


def _encode_body(api, request: object, reply: object, decoded) -> dict:
    if api.api_key == 8:
        return api.encode(reply, decoded.body)
    if api.api_key == 9:
        from protocol.wire.offsets import fetch_group_entry
        return api.encode([fetch_group_entry(request, reply)], decoded.header.api_version)
    return api.encode(reply)


def best_us(fn: Callable[[], object], count: int, repeats: int) -> float:
    """The best of ``repeats`` timings of ``fn`` (which handles ``count`` requests), µs each,
    with the garbage collector off as ``timeit`` has it: the requests a run keeps would
    otherwise trigger collections a gateway, which drops each request when answered, never
    pays for."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return min(times) / count * 1e6


def scenario(name: str, frames: list[bytes], shard: GroupCoordinatorShard, repeats: int
             ) -> list[tuple[str, float, float]]:
    """(phase, kio µs, hand-written µs) for each phase of ``frames`` through ``shard``."""
    n = len(frames)
    decoded = [decode_request(f) for f in frames]
    assert decoded == [decode_request_with_kio(f) for f in frames], name
    api = BY_API_KEY[decoded[0].header.api_key]
    requests = [_translate(api, d) for d in decoded]
    replies = dict((id(q), r) for q, r in shard.handle_batch(requests).replies)
    asked = list(zip(requests, decoded, strict=True))
    answers = [(d.header, _encode_body(api, q, replies[id(q)], d)) for q, d in asked]
    for header, body in answers:
        assert encode_response(header, body) == encode_response_with_kio(header, body), name

    def shard_checked() -> None:
        shard.handle_batch([_translate(api, d) for d in decoded])

    def shard_vouched() -> None:
        fresh = [_translate(api, d) for d in decoded]
        shard.handle_batch(fresh, checked={id(r) for r in fresh})

    def timed(fn: Callable[[], object]) -> float:
        return best_us(fn, n, repeats)

    translate = timed(lambda: [_translate(api, d) for d in decoded])
    to_body = timed(lambda: [_encode_body(api, q, replies[id(q)], d) for q, d in asked])
    rows = [
        ("decode", timed(lambda: [decode_request_with_kio(f) for f in frames]),
         timed(lambda: [decode_request(f) for f in frames])),
        ("translate", translate, translate),
        ("shard", timed(shard_checked) - translate, timed(shard_vouched) - translate),
        ("encode", to_body + timed(lambda: [encode_response_with_kio(*a) for a in answers]),
         to_body + timed(lambda: [encode_response(*a) for a in answers])),
    ]
    return [*rows, ("total", sum(r[1] for r in rows), sum(r[2] for r in rows))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n = args.requests

    shard = GroupCoordinatorShard(metadata=MetadataImage([TOPIC]))
    epochs = settled_group(shard, MEMBERS)
    steady = [heartbeat_frame(mid, e) for mid, e in epochs.items()]
    scenarios = [
        ("OffsetCommit v9, 1 partition", [commit_frame(1)] * n),
        ("OffsetCommit v9, 10 partitions", [commit_frame(10)] * (n // 10)),
        ("OffsetFetch v9, 1 partition", [fetch_frame()] * n),
        (f"ConsumerGroupHeartbeat v1, steady, {MEMBERS} members",
         steady * max(1, n // len(steady))),
    ]
    assert topic_uuid(TOPIC.topic_id)  # the topic has a wire UUID (heartbeats may name it)
    print(f"µs per request, best of {args.repeats} runs; kio = decode and encode by kio and "
          "every request type-checked by the shard; hand = the hand-written codecs and the "
          "shard trusting what they built")
    print(f"{'scenario':44s} {'phase':9s} {'kio':>8s} {'hand':>8s} {'kio/hand':>8s}")
    for name, frames in scenarios:
        for i, (phase, kio, hand) in enumerate(scenario(name, frames, shard, args.repeats)):
            label = name if i == 0 else ""
            print(f"{label:44s} {phase:9s} {kio:8.2f} {hand:8.2f} {kio / hand:7.2f}x")


if __name__ == "__main__":
    main()
