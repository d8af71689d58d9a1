"""One connection's requests against a client that gives up: what it queued behind a request
the gateway held is not served once it has closed (``actors.gateway.connection``). No Ray: the
handlers are stand-ins, the socket is real."""

from __future__ import annotations

import asyncio
import socket
import struct

from actors.gateway import connection
from actors.gateway.serving import GatewayOptions
from protocol.wire.framing import frame

OFFSET_COMMIT = 8


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def _offset_commit(correlation_id: int, group: str, offset: int) -> bytes:
    """An OffsetCommit v2 frame: header v1, one topic, one partition."""
    header = struct.pack(">hhi", OFFSET_COMMIT, 2, correlation_id) + _string("test")
    body = (_string(group) + struct.pack(">i", -1) + _string("") + struct.pack(">q", -1)
            + struct.pack(">i", 1) + _string("foo") + struct.pack(">i", 1)
            + struct.pack(">iq", 0, offset) + struct.pack(">h", -1))
    return frame(header + body)


class _Core:
    """What ``Connection`` reads of ``GatewayCore``, and nothing else."""

    options = GatewayOptions(max_request_bytes=1 << 20)

    def count(self, api_key: int, version: int) -> None:
        pass


def test_a_commit_queued_behind_a_held_request_is_not_served_after_the_client_closed(
        monkeypatch):
    served: list[int] = []

    async def scenario() -> None:
        release, first_arrived = asyncio.Event(), asyncio.Event()

        async def commit(core, req) -> dict:
            served.append(req.body["topics"][0]["partitions"][0]["committed_offset"])
            if len(served) == 1:  # the gateway holds it, as while a partition restarts
                first_arrived.set()
                await release.wait()
            return {"throttle_time": 0, "topics": []}

        monkeypatch.setitem(connection.HANDLERS, OFFSET_COMMIT, commit)
        finished = asyncio.get_running_loop().create_future()

        readers: list[asyncio.StreamReader] = []

        async def accept(reader, writer) -> None:
            readers.append(reader)
            try:
                await connection.Connection(_Core(), reader, writer).run()
            finally:
                finished.set_result(None)

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(_offset_commit(1, "g", 100))
        await asyncio.wait_for(first_arrived.wait(), 10)
        client.sendall(_offset_commit(2, "g", 50))  # queued behind the held one
        client.close()  # the client timed them out and went away
        deadline = asyncio.get_running_loop().time() + 10
        while not readers[0]._eof:  # the gateway's side has seen the close (nothing public says)
            assert asyncio.get_running_loop().time() < deadline, "the close never arrived"
            await asyncio.sleep(0.01)
        release.set()
        await asyncio.wait_for(finished, 10)  # the connection is done: nothing more to serve
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())
    assert served == [100]


def _read_frames(sock: socket.socket, n: int) -> list[int]:
    """The correlation ids of the next ``n`` response frames, in the order they came."""
    ids, buf = [], b""
    while len(ids) < n:
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "the connection closed early"
            buf += chunk
        size = struct.unpack(">i", buf[:4])[0]
        ids.append(struct.unpack(">i", buf[4:8])[0])
        buf = buf[4 + size:]
    return ids


def _serve_one(respond, pipelined, send: bytes, replies: int,
               then_closed: bool = False) -> list[int]:
    """One connection on a real socket with ``respond`` as its handler: ``send`` written at
    once, the correlation ids of the first ``replies`` response frames returned (and, with
    ``then_closed``, the connection checked to close right after them)."""

    async def scenario() -> list[int]:
        server = await asyncio.start_server(
            lambda r, w: connection.Connection(_Core(), r, w, respond, pipelined).run(),
            "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        client.settimeout(10)
        client.sendall(send)
        ids = await asyncio.to_thread(_read_frames, client, replies)
        if then_closed:
            assert await asyncio.to_thread(client.recv, 65536) == b""
        client.close()
        server.close()
        return ids

    return asyncio.run(scenario())


def _reply(correlation_id: int) -> bytes:
    return frame(struct.pack(">i", correlation_id) + struct.pack(">i", 0))


def test_pipelined_requests_are_all_submitted_at_once_and_answered_in_request_order():
    submitted: list[int] = []

    async def respond(req) -> bytes:
        cid = req.header.correlation_id
        submitted.append(cid)
        # The first is answered last: its reply is held until every later one was submitted.
        while cid == 1 and len(submitted) < 5:
            await asyncio.sleep(0.001)
        return _reply(cid)

    sent = b"".join(_offset_commit(i, "g", i) for i in range(1, 6))
    assert _serve_one(respond, frozenset({OFFSET_COMMIT}), sent, 5) == [1, 2, 3, 4, 5]
    assert submitted == [1, 2, 3, 4, 5]


def test_a_request_that_is_not_pipelined_waits_until_every_earlier_reply_is_written():
    events: list[str] = []

    async def respond(req) -> bytes:
        cid = req.header.correlation_id
        events.append(f"start {cid}")
        await asyncio.sleep(0.01 if cid == 1 else 0)
        events.append(f"end {cid}")
        return _reply(cid)

    sent = b"".join(_offset_commit(i, "g", i) for i in range(1, 4))
    assert _serve_one(respond, frozenset(), sent, 3) == [1, 2, 3]
    assert events == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]


def test_a_bad_frame_behind_pipelined_requests_closes_only_after_their_replies():
    async def respond(req) -> bytes:
        await asyncio.sleep(0.01)
        return _reply(req.header.correlation_id)

    unknown_api = frame(struct.pack(">hhi", 999, 0, 9) + _string("test"))
    sent = _offset_commit(1, "g", 1) + _offset_commit(2, "g", 2) + unknown_api
    assert _serve_one(respond, frozenset({OFFSET_COMMIT}), sent, 2, then_closed=True) == [1, 2]


def test_a_client_that_pipelines_and_never_reads_holds_a_bounded_write_buffer():
    """Thousands of pipelined requests, no reply read: the server stops reading instead of
    buffering replies, and once the client reads, every reply comes, in order."""
    n, reply_bytes, bound_bytes = 3_000, 4096, 1 << 20  # 12 MB of replies, 1 MiB held at most

    async def respond(req) -> bytes:
        return frame(struct.pack(">i", req.header.correlation_id) + bytes(reply_bytes))

    async def scenario() -> tuple[list[int], int]:
        served: list[tuple[connection.Connection, asyncio.StreamWriter]] = []

        async def accept(reader, writer) -> None:
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                                       16384)  # the kernel holds little
            conn = connection.Connection(_Core(), reader, writer, respond,
                                         frozenset({OFFSET_COMMIT}))
            served.append((conn, writer))
            await conn.run()

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        client.connect(server.sockets[0].getsockname())
        client.settimeout(30)
        sender = asyncio.ensure_future(asyncio.to_thread(
            client.sendall, b"".join(_offset_commit(i, "g", i) for i in range(1, n + 1))))
        held = 0

        def buffered() -> int:
            nonlocal held
            if served:
                held = max(held, served[0][1].transport.get_write_buffer_size())
            return held

        deadline = asyncio.get_running_loop().time() + 30
        while not (served and getattr(served[0][0], "reading_paused", False)):
            if buffered() > bound_bytes:
                break  # the server kept reading and buffering: failed already
            assert asyncio.get_running_loop().time() < deadline, "the server neither paused"
            await asyncio.sleep(0.001)
        reading = asyncio.ensure_future(asyncio.to_thread(_read_frames, client, n))
        while not reading.done():
            buffered()
            await asyncio.sleep(0.001)
        ids = await reading
        await sender
        client.close()
        server.close()
        return ids, held

    ids, held = asyncio.run(scenario())
    assert held <= 1 << 20, f"the server buffered {held} bytes for a client that did not read"
    assert ids == list(range(1, n + 1))


def test_one_failing_connection_does_not_cancel_a_reply_shared_with_another():
    """A partition batches commits of several connections into one future: a connection whose
    own request fails stops waiting for it, and the others still get their replies."""

    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        shared = loop.create_future()  # one batch's replies, as a partition's listener makes
        submitted: list[str] = []

        def respond(req):
            group = req.body["group_id"]
            submitted.append(group)
            if group == "boom":
                async def fails() -> bytes:
                    raise RuntimeError("a handler's bug")
                return fails()
            cid = req.header.correlation_id
            return connection.Pending(shared, lambda replies: _reply(cid))

        server = await asyncio.start_server(
            lambda r, w: connection.Connection(_Core(), r, w, respond,
                                               frozenset({OFFSET_COMMIT})).run(),
            "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        bystander = socket.create_connection(("127.0.0.1", port))
        bystander.settimeout(10)
        bystander.sendall(_offset_commit(1, "g", 1))
        failing = socket.create_connection(("127.0.0.1", port))
        failing.settimeout(10)
        deadline = loop.time() + 10
        while submitted != ["g"]:
            assert loop.time() < deadline, "the bystander's commit was never submitted"
            await asyncio.sleep(0.01)
        failing.sendall(_offset_commit(1, "boom", 1) + _offset_commit(2, "g", 2))
        assert await asyncio.to_thread(failing.recv, 65536) == b""  # it failed and closed
        shared.set_result([None, None])  # the batch is answered
        ids = await asyncio.to_thread(_read_frames, bystander, 1)
        bystander.close()
        server.close()
        return ids

    assert asyncio.run(scenario()) == [1]
