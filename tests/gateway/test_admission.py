"""The gateway's connection limit (Kafka's ``max.connections``, ``actors.gateway.admission``):
no Ray, real sockets, a stand-in for the connection's work."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from actors.gateway.admission import MAX_CONNECTIONS, Admission
from actors.gateway.core import GatewayOptions

WAIT_S = 10


async def _until(condition) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_a_connection_beyond_the_limit_is_closed_at_once_and_counted_and_a_freed_slot_is_reused():
    async def scenario() -> None:
        admission = Admission(max_connections=2)
        release: list[asyncio.Event] = []

        async def hold(reader, writer) -> None:  # a connection that stays open until released
            done = asyncio.Event()
            release.append(done)
            try:
                await done.wait()
            finally:
                writer.close()

        server = await asyncio.start_server(
            lambda r, w: admission.serve(r, w, hold), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await _until(lambda: admission.open == 2)

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(1), WAIT_S) == b""  # closed, nothing sent
        assert (admission.open, admission.refused) == (2, 1)
        writer.close()

        release[0].set()  # one admitted connection ends: its slot is free again
        assert await asyncio.wait_for(clients[0][0].read(1), WAIT_S) == b""
        await _until(lambda: admission.open == 1)
        late_reader, late_writer = await asyncio.open_connection("127.0.0.1", port)
        await _until(lambda: admission.open == 2)
        assert admission.refused == 1 and len(release) == 3

        for done in release:
            done.set()
        await _until(lambda: admission.open == 0)
        for _, w in [*clients, (late_reader, late_writer)]:
            w.close()
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())


def test_a_connection_that_fails_frees_its_slot():
    async def scenario() -> None:
        admission = Admission(max_connections=1)

        async def fail(reader, writer) -> None:
            writer.close()
            raise ConnectionResetError("the client went away")

        server = await asyncio.start_server(
            lambda r, w: _swallow(admission.serve(r, w, fail)), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert await asyncio.wait_for(reader.read(1), WAIT_S) == b""
            writer.close()
            await _until(lambda: admission.open == 0)
        assert admission.refused == 0
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())


async def _swallow(coro) -> None:
    with contextlib.suppress(ConnectionError):
        await coro


def test_the_limit_is_a_gateway_option_with_a_stated_default_and_must_admit_someone():
    assert GatewayOptions().max_connections == MAX_CONNECTIONS == 10_000
    assert GatewayOptions(max_connections=5).max_connections == 5
    with pytest.raises(ValueError, match="at least 1"):
        Admission(0)
