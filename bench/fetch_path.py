"""What one Fetch costs the gateway's event loop, in process (no Ray, no sockets).

Run: ``python bench/fetch_path.py [--repeat 300]``. A Fetch v12 request shaped like
librdkafka's (eight partitions of one topic, 50 MiB ``max_bytes``, 1 MiB per partition) goes
through what the gateway does with it on its event loop: decode the frame, build the reply from
the synthetic stream (``stream.fetch_response``), write the framed response, once through kio's
writer (``encode_response`` of the plain dict: the path before issue 23's Fetch work) and once
written directly around the cached batches (``fetch_body_parts``: the path now). The two frames
are checked equal. Shapes:

- ``8 partitions, cached``: every chunk already encoded (the steady state of consumers reading
  from the earliest offset: every partition of every topic is the same stream);
- ``1 MiB reply, cached``: a request naming 50 partitions, filled up to ``MAX_RESPONSE_BYTES``;
- ``1 MiB reply, nothing cached``: the same on a fresh stream, so ``MAX_BUILDS_PER_RESPONSE``
  chunks are encoded for it: the longest one fetch holds the loop (before the socket write).

It prints the median microseconds of each step and of the whole, and the records each reply
carries. Times are wall clock in one process: on a shared machine, compare the rows of one run.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import struct
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kio.index import load_request_schema  # noqa: E402
from kio.serial import entity_writer  # noqa: E402

from protocol.metadata import TopicMetadata  # noqa: E402
from protocol.wire import stream  # noqa: E402
from protocol.wire.codec import EncodedBody, decode_request, encode_response  # noqa: E402
from protocol.wire.entities import build  # noqa: E402
from protocol.wire.fetch_response import fetch_body_parts  # noqa: E402
from protocol.wire.topics import TopicIndex  # noqa: E402

FETCH, VERSION = 1, 12
INDEX = TopicIndex([TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "wire", 64)])
NOW_MS = 1_800_000_000_000


def request_frame(offsets: list[int]) -> bytes:
    """A Fetch v12 request as librdkafka sends it, one partition per offset."""
    body = {"replica_id": -1, "max_wait": 100, "min_bytes": 1, "max_bytes": 52_428_800,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{"topic": "wire", "partitions": [
                {"partition": p, "fetch_offset": o, "partition_max_bytes": 1_048_576,
                 "current_leader_epoch": 0, "log_start_offset": -1}
                for p, o in enumerate(offsets)]}]}
    schema = load_request_schema(FETCH, VERSION)
    buf = io.BytesIO()
    client = b"rdkafka"
    buf.write(struct.pack(">hhih", FETCH, VERSION, 7, len(client)) + client + b"\x00")
    entity_writer(schema)(buf, build(schema, body))
    return buf.getvalue()


def median_us(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def measure(name: str, offsets: list[int], repeat: int, warm: bool) -> None:
    frame = request_frame(offsets)
    s = stream.SyntheticStream(anchor_ms=0)
    decoded = decode_request(frame)
    if warm:
        for _ in range(50):  # every chunk the request names encoded and cached
            stream.fetch_response(decoded.body, INDEX, s, NOW_MS, lambda _t: True)
        build_us = median_us(lambda: stream.fetch_response(decoded.body, INDEX, s, NOW_MS,
                                                           lambda _t: True), repeat)
    else:
        fresh = [stream.SyntheticStream(anchor_ms=0) for _ in range(min(repeat, 20))]
        build_us = statistics.median(median_us(lambda f=f: stream.fetch_response(
            decoded.body, INDEX, f, NOW_MS, lambda _t: True), 1) for f in fresh)
    reply, count = stream.fetch_response(decoded.body, INDEX, s, NOW_MS, lambda _t: True)
    direct = encode_response(decoded.header, EncodedBody(fetch_body_parts(VERSION, reply)))
    assert direct == encode_response(decoded.header, reply), "direct bytes differ from kio's"
    decode_us = median_us(lambda: decode_request(frame), repeat)
    kio_us = median_us(lambda: encode_response(decoded.header, reply), max(repeat // 10, 5))
    direct_us = median_us(lambda: encode_response(
        decoded.header, EncodedBody(fetch_body_parts(VERSION, reply))), repeat)
    before, now = decode_us + build_us + kio_us, decode_us + build_us + direct_us
    print(f"| {name} | {count:,} | {len(direct):,} | {decode_us:,.1f} | {build_us:,.1f} | "
          f"{kio_us:,.1f} | {direct_us:,.1f} | {before:,.1f} | {now:,.1f} | "
          f"{before / now:.1f}x |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=300)
    args = p.parse_args()
    chunk = stream.CHUNK_RECORDS
    print("| reply | records | bytes | decode µs | build µs | kio write µs | direct write µs "
          "| total with kio µs | total direct µs | kio/direct |")
    print("|---" * 10 + "|")
    measure("8 partitions, cached", [3 * chunk] * 8, args.repeat, warm=True)
    wide = [(k % 90) * chunk for k in range(50)]
    measure("1 MiB reply, cached", wide, args.repeat, warm=True)
    measure("1 MiB reply, nothing cached", wide, args.repeat, warm=False)
    print(f"bounds: {stream.MAX_CHUNKS_PER_PARTITION} chunks of {chunk} records a partition, "
          f"{stream.MAX_RESPONSE_BYTES:,} record bytes and {stream.MAX_BUILDS_PER_RESPONSE} "
          f"encoded batches a reply; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
