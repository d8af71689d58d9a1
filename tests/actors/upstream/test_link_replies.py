"""How a link to an upstream broker cuts replies out of its socket's bytes: whatever way the
broker's bytes are split across reads, each reply reaches its own request, in order, whole;
a reply that cannot be one (a size out of range, a correlation id out of order) closes the
link and fails every request waiting on it.

The peer is a TCP server speaking Kafka's framing (ApiVersions, then replies written in the
chunks a test chooses): no broker lets a test choose how its bytes are split.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from actors.upstream.link import UpstreamLink, UpstreamUnavailable
from actors.upstream.settings import UpstreamSettings
from protocol.wire.codec import read_header
from protocol.wire.upstream import API_VERSIONS, encode_reply, encode_request

DEADLINE_S = 10.0


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _reply(correlation_id: int, payload: bytes) -> bytes:
    return _framed(struct.pack(">i", correlation_id) + payload)


def _request(correlation_id: int) -> bytes:
    return encode_request(API_VERSIONS, 3, correlation_id, "link-test",
                          {"client_software_name": "t", "client_software_version": "1"})


async def _with_peer(answer, run):
    """A peer answering ApiVersions, then handing the correlation ids of what came next (a
    list per read) to ``answer(ids, writer)``; ``run(link)`` against it."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        versions_answered = False
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                header, _ = read_header(frame)
                if not versions_answered:
                    body = encode_reply(API_VERSIONS, 3, header.correlation_id, {
                        "error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0,
                                                       "max_version": 3}],
                        "throttle_time_ms": 0})
                    writer.write(_framed(body))
                    versions_answered = True
                    continue
                await answer(header.correlation_id, writer)
        except asyncio.IncompleteReadError:
            pass

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    link = await UpstreamLink("127.0.0.1", port, UpstreamSettings.parse(f"127.0.0.1:{port}")
                              ).open()
    try:
        return await asyncio.wait_for(run(link), DEADLINE_S)
    finally:
        link.close()
        server.close()


def test_replies_split_across_reads_and_joined_in_one_reach_their_own_requests():
    held: list[int] = []

    async def answer(correlation_id: int, writer: asyncio.StreamWriter) -> None:
        held.append(correlation_id)
        if len(held) < 3:
            return
        a, b, c = (_reply(i, bytes([i]) * (100 + i)) for i in held)
        # the first two in one write, the third in three pieces with pauses between
        writer.write(a + b + c[:2])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(c[2:50])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(c[50:])

    async def run(link: UpstreamLink) -> list[bytes]:
        called: list[int] = []
        futures = [link.relay(_request(i), then=lambda i=i: called.append(i)) for i in (5, 6, 7)]
        replies = await asyncio.gather(*futures)
        assert called == [5, 6, 7]
        return replies

    replies = asyncio.run(_with_peer(answer, run))
    assert replies == [_reply(i, bytes([i]) * (100 + i)) for i in (5, 6, 7)]


@pytest.mark.parametrize("bad", ["size", "order"])
def test_a_reply_that_cannot_be_one_closes_the_link_and_fails_every_waiting_request(bad):
    async def answer(correlation_id: int, writer: asyncio.StreamWriter) -> None:
        if bad == "size":
            writer.write(struct.pack(">i", 2) + b"xx")
        else:
            writer.write(_reply(correlation_id + 1, b"not yours"))

    async def run(link: UpstreamLink) -> tuple[str, list[bool]]:
        called: list[bool] = []
        futures = [link.relay(_request(i), then=lambda: called.append(True)) for i in (1, 2)]
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert all(isinstance(r, UpstreamUnavailable) for r in results), results
        return link.closed, called

    closed, called = asyncio.run(_with_peer(answer, run))
    assert closed == ("a reply of 2 bytes" if bad == "size" else "reply 2 came for request 1")
    assert called == [True, True]


def test_a_link_whose_broker_leaves_fails_its_waiting_requests_and_sends_no_more():
    async def answer(_correlation_id: int, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def run(link: UpstreamLink) -> None:
        with pytest.raises(UpstreamUnavailable, match="went away"):
            await link.relay(_request(1))
        with pytest.raises(UpstreamUnavailable, match="is closed"):
            link.relay(_request(2))

    asyncio.run(_with_peer(answer, run))
