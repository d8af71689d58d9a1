"""A connection's deadlines and pre-authentication bounds (``actors.gateway.connection``) and
a full listener reclaiming idle connections (``actors.gateway.admission``): no Ray, real
sockets, stand-in handlers. Every wait polls a condition with a deadline."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import struct
import time
import weakref

from actors.gateway import connection
from actors.gateway.admission import Admission
from actors.gateway.serving import GatewayOptions
from protocol.wire.framing import frame
from tests.gateway.test_connection import OFFSET_COMMIT, _offset_commit, _read_frames, _reply

WAIT_S = 10


class _Core:
    """What ``Connection`` reads of a listener: options, counts, no users."""

    def __init__(self, **options) -> None:
        self.options = GatewayOptions(**options)

    def count(self, api_key: int, version: int) -> None:
        pass

    def user(self, name: str):
        return None


def _api_versions(correlation_id: int) -> bytes:
    return frame(struct.pack(">hhih", 18, 0, correlation_id, -1))


async def _until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.01)


def _closed(sock: socket.socket) -> bool:
    """Read until the server closes (True) or ``WAIT_S`` pass with it open (False)."""
    sock.settimeout(WAIT_S)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


async def _server(core: _Core, respond=None, pipelined=frozenset(), admission=None):
    async def serve(reader, writer) -> None:
        await connection.Connection(core, reader, writer, respond, pipelined).run()

    callback = serve if admission is None else admission.accepting(serve)
    server = await asyncio.start_server(callback, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_a_silent_connection_is_closed_after_connections_max_idle_ms():
    async def scenario() -> float:
        server, port = await _server(_Core(connections_max_idle_ms=200))
        client = socket.create_connection(("127.0.0.1", port))
        opened = time.monotonic()
        assert await asyncio.to_thread(_closed, client), "the idle connection stayed open"
        server.close()
        return time.monotonic() - opened

    assert asyncio.run(scenario()) >= 0.2
    assert GatewayOptions().connections_max_idle_ms == 600_000  # Kafka's default


def test_a_connection_waiting_for_its_reply_is_not_idle():
    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()

        async def respond(req) -> bytes:  # held for three idle deadlines
            held_until = loop.time() + 0.6
            await _until(lambda: loop.time() >= held_until, "time to pass")
            return _reply(req.header.correlation_id)

        server, port = await _server(_Core(connections_max_idle_ms=200), respond)
        client = socket.create_connection(("127.0.0.1", port))
        client.settimeout(WAIT_S)
        client.sendall(_offset_commit(7, "g", 1))
        ids = await asyncio.to_thread(_read_frames, client, 1)
        client.close()
        server.close()
        return ids

    assert asyncio.run(scenario()) == [7]


def test_a_sasl_connection_that_does_not_authenticate_in_time_is_closed_however_busy():
    def ask_until_closed(sock: socket.socket) -> bool:
        sock.settimeout(WAIT_S)
        deadline = time.monotonic() + WAIT_S
        n = 0
        while time.monotonic() < deadline:
            n += 1
            try:
                sock.sendall(_api_versions(n))
                _read_frames(sock, 1)
            except (AssertionError, OSError):
                return True  # closed by the server
        return False

    async def scenario() -> bool:
        core = _Core(sasl_mechanisms=("PLAIN",), authentication_timeout_ms=300)
        server, port = await _server(core)
        client = socket.create_connection(("127.0.0.1", port))
        closed = await asyncio.to_thread(ask_until_closed, client)
        server.close()
        return closed

    assert asyncio.run(scenario()), "an unauthenticated connection outlived its deadline"


def test_before_authentication_a_frame_over_512_kib_is_refused_from_its_size_prefix():
    async def scenario() -> bool:
        server, port = await _server(_Core(sasl_mechanisms=("PLAIN",)))
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(struct.pack(">i", (512 << 10) + 1) + b"\x00\x12")  # no body follows
        closed = await asyncio.to_thread(_closed, client)
        server.close()
        return closed

    assert asyncio.run(scenario()), "the server waited for the body of an oversized frame"
    assert GatewayOptions().sasl_server_max_receive_bytes == 524_288


def test_a_request_before_authentication_is_refused_from_its_header_before_its_body_is_decoded(
        caplog):
    # A whole header (flexible: no tagged fields), then a body that does not decode.
    metadata_with_garbage = frame(struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\xff" * 64)

    async def scenario() -> bool:
        server, port = await _server(_Core(sasl_mechanisms=("PLAIN",)))
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(metadata_with_garbage)
        closed = await asyncio.to_thread(_closed, client)
        server.close()
        return closed

    with caplog.at_level(logging.INFO, logger=connection.__name__):
        assert asyncio.run(scenario())
    reasons = [r.getMessage() for r in caplog.records if r.name == connection.__name__]
    assert any("Metadata before SASL authentication completed" in r for r in reasons), reasons
    assert not any("decode" in r for r in reasons), reasons


def test_a_full_listener_closes_its_longest_idle_connection_for_a_newcomer():
    async def scenario() -> None:
        admission = Admission(max_connections=2, reclaim_idle_ms=0)
        server, port = await _server(_Core(), admission=admission)
        oldest = socket.create_connection(("127.0.0.1", port))
        await _until(lambda: admission.open == 1, "the first admitted")
        second = socket.create_connection(("127.0.0.1", port))
        await _until(lambda: admission.open == 2, "the second admitted")
        newcomer = socket.create_connection(("127.0.0.1", port))
        newcomer.settimeout(WAIT_S)
        assert await asyncio.to_thread(_closed, oldest), "the idle connection was kept"
        newcomer.sendall(_api_versions(5))
        assert await asyncio.to_thread(_read_frames, newcomer, 1) == [5]
        assert (admission.open, admission.reclaimed, admission.refused) == (2, 1, 0)
        for sock in (second, newcomer):
            sock.close()
        server.close()

    asyncio.run(scenario())


def test_a_full_listener_of_busy_connections_refuses_the_newcomer_and_keeps_them():
    async def scenario() -> None:
        release = asyncio.Event()
        held: list[int] = []

        async def respond(req) -> bytes:
            held.append(req.header.correlation_id)
            await release.wait()
            return _reply(req.header.correlation_id)

        admission = Admission(max_connections=2, reclaim_idle_ms=0)
        server, port = await _server(_Core(), respond, frozenset({OFFSET_COMMIT}), admission)
        busy = []
        for n in (1, 2):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.settimeout(WAIT_S)
            sock.sendall(_offset_commit(n, "g", n))
            busy.append(sock)
            await _until(lambda n=n: len(held) == n, "the request held")
        newcomer = socket.create_connection(("127.0.0.1", port))
        assert await asyncio.to_thread(_closed, newcomer), "the newcomer was admitted"
        assert admission.refused == 1 and admission.reclaimed == 0
        release.set()
        assert [await asyncio.to_thread(_read_frames, s, 1) for s in busy] == [[1], [2]]
        for sock in busy:
            sock.close()
        server.close()

    asyncio.run(scenario())


def test_a_closed_connection_is_freed_without_the_cyclic_collector():
    """Whatever ended it (the client closing after a reply, a bad frame, the idle deadline), a
    connection is freed by reference counting alone: left in a cycle it waits, with its buffers
    and its socket, for a full pass of the collector, which then frees every such connection at
    once (issue 30: passes of 0.7 s after a fuzz run)."""

    async def scenario() -> list[weakref.ref]:
        served: list[weakref.ref] = []

        async def serve(reader, writer) -> None:
            # The fourth is the gateway's own (its handlers answer): its first client idles.
            answers = respond if len(served) < 3 else None
            conn = connection.Connection(core, reader, writer, answers, frozenset({8}))
            served.append(weakref.ref(conn))
            await conn.run()

        async def respond(req) -> bytes:
            return _reply(req.header.correlation_id)

        core = _Core(connections_max_idle_ms=200)
        admission = Admission(max_connections=10)  # as a listener serves: a slot each
        server = await asyncio.start_server(admission.accepting(serve), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        answered = socket.create_connection(("127.0.0.1", port))
        answered.sendall(_offset_commit(1, "g", 1))
        assert await asyncio.to_thread(_read_frames, answered, 1) == [1]
        answered.close()
        bad = socket.create_connection(("127.0.0.1", port))
        bad.sendall(struct.pack(">i", 6) + b"\x00\x12\x00\x63\x00\x00")  # no such version
        idle = socket.create_connection(("127.0.0.1", port))
        assert await asyncio.to_thread(_closed, idle)
        bad.close()
        await _until(lambda: len(served) == 3, "three connections served")
        gateways = socket.create_connection(("127.0.0.1", port))
        assert await asyncio.to_thread(_closed, gateways)
        await _until(lambda: len(served) == 4 and all(r() is None for r in served),
                     "every closed connection freed")
        server.close()
        return served

    gc.collect()
    gc.disable()
    try:
        assert len(asyncio.run(scenario())) == 4
    finally:
        gc.enable()
