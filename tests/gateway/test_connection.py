"""One connection's requests against a client that gives up: what it queued behind a request
the gateway held is not served once it has closed (``actors.gateway.connection``). No Ray: the
handlers are stand-ins, the socket is real."""

from __future__ import annotations

import asyncio
import socket
import struct
from types import SimpleNamespace

from actors.gateway import connection
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

    options = SimpleNamespace(max_request_bytes=1 << 20, sasl_mechanisms=())

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
