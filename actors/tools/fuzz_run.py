"""Fuzzed frames and issue 30's attacks sent to Cohort's listeners: the I/O half of the wire fuzzer.

``wire_fuzz`` makes the frames (pure, by seed); this module sends them to a listener (a
gateway, or a partition's listener for a gateway) over many connections at once, unauthenticated
or after SASL/PLAIN, and counts what the listener did with each: answered it (``replied``),
closed the connection (``closed``), or neither within the reply timeout (``silent``: a request
Kafka answers late or never, a JoinGroup held for its rebalance, an acks=0 Produce; the fuzzer
closes that connection itself). Beside them, the attacks the frames cannot make: sockets left
idle, sockets that send a byte at a time, frames whose size prefix is past every bound. And the
checks a run ends with (``fuzz_checks``): every listener still answers ApiVersions, no actor
restarted, a real client still commits and reads its offset back.

Used by the suite's short run (``tests/gateway/test_wire_fuzz.py``) and by ``bench/fuzz.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import struct
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from actors.tools.wire_fuzz import FuzzFrame, Vocabulary, frames
from actors.tools.wire_tokens import framed, request_tokens

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
CONNECT_TIMEOUT_S = 10.0
# Kafka's connection.failed.authentication.delay.ms is 100 ms: a refused login, retried this late.
LOGIN_RETRY_S = 0.2
SLOWEST = 8


@dataclass(frozen=True)
class Target:
    """One listener: ``credentials`` (user, password) to log in with SASL/PLAIN first, or None
    to send unauthenticated."""

    name: str
    address: str
    credentials: tuple[str, str] | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({'SASL/PLAIN' if self.credentials else 'unauthenticated'})"


@dataclass
class Tally:
    """What a listener did with the frames sent to it; by mutation too."""

    sent: int = 0
    replied: int = 0
    closed: int = 0
    silent: int = 0
    # Connections the listener refused before a frame could go (full, or a login refused).
    refused: int = 0
    by_mutation: Counter = field(default_factory=Counter)
    # The frames answered (replied or closed) slowest: (seconds, API key, version, mutation,
    # bytes), at most ``SLOWEST`` of them, slowest first once ``slowest_first`` sorts them.
    slowest: list = field(default_factory=list)

    def count(self, frame: FuzzFrame, outcome: str, seconds: float = 0.0) -> None:
        self.sent += 1
        setattr(self, outcome, getattr(self, outcome) + 1)
        self.by_mutation[(frame.mutation, outcome)] += 1
        if outcome != "silent":
            entry = (seconds, frame.api_key, frame.version, frame.mutation, len(frame.data))
            (heapq.heappush if len(self.slowest) < SLOWEST else heapq.heappushpop)(
                self.slowest, entry)

    def add(self, other: Tally) -> None:
        for name in ("sent", "replied", "closed", "silent", "refused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.by_mutation.update(other.by_mutation)
        self.slowest = heapq.nlargest(SLOWEST, self.slowest + other.slowest)

    def slowest_first(self) -> list:
        return sorted(self.slowest, reverse=True)


def _frame(api_key: int, version: int, body: dict, correlation_id: int = 1) -> bytes:
    return framed(b"".join(t.data for t in request_tokens(api_key, version, body,
                                                          correlation_id)))


API_VERSIONS_V0 = _frame(API_VERSIONS, 0, {})


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def connect(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to ``target``, logged in when it has credentials (``ConnectionError`` if
    the listener refuses it or the login)."""
    host, port = target.address.rsplit(":", 1)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)),
                                            CONNECT_TIMEOUT_S)
    if target.credentials is None:
        return reader, writer
    user, password = target.credentials
    try:
        writer.write(_frame(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}))
        reply = await asyncio.wait_for(read_frame(reader), CONNECT_TIMEOUT_S)
        token = b"\0" + user.encode() + b"\0" + password.encode()
        writer.write(_frame(SASL_AUTHENTICATE, 2, {"auth_bytes": token}))
        login = await asyncio.wait_for(read_frame(reader), CONNECT_TIMEOUT_S)
    except (asyncio.IncompleteReadError, TimeoutError, OSError) as e:
        writer.close()
        raise ConnectionError(f"SASL login to {target.address} failed: {e!r}") from None
    # Handshake v1: correlation id, error code; Authenticate v2 (flexible): one more tag byte.
    codes = struct.unpack_from(">h", reply, 4)[0], struct.unpack_from(">h", login, 5)[0]
    if codes != (0, 0):
        writer.close()
        raise ConnectionError(f"SASL login to {target.address} refused: error codes {codes}")
    return reader, writer


async def send_frames(target: Target, frames: Iterator[FuzzFrame], count: int,
                      workers: int = 8, reply_timeout_s: float = 1.0) -> Tally:
    """Send ``count`` frames of ``frames`` to ``target`` over ``workers`` connections at once,
    each waiting for its frame's answer before the next; a connection the listener closed,
    or left silent, is replaced."""
    tally = Tally()
    left = [count]

    async def work() -> None:
        conn = None
        while left[0] > 0:
            left[0] -= 1  # taken before the first await: the workers share the count
            if conn is None:
                try:
                    conn = await connect(target)
                except (ConnectionError, OSError, TimeoutError):
                    left[0] += 1
                    tally.refused += 1
                    await asyncio.sleep(LOGIN_RETRY_S)
                    continue
            frame = next(frames)
            started = time.perf_counter()
            outcome = await _exchange(conn, frame.data, reply_timeout_s)
            tally.count(frame, outcome, time.perf_counter() - started)
            if outcome != "replied":
                conn[1].close()
                conn = None
        if conn is not None:
            conn[1].close()

    await asyncio.gather(*(work() for _ in range(workers)))
    return tally


async def _exchange(conn, data: bytes, reply_timeout_s: float) -> str:
    reader, writer = conn
    try:
        writer.write(data)
        await writer.drain()
        await asyncio.wait_for(read_frame(reader), reply_timeout_s)
    except TimeoutError:
        return "silent"
    except (asyncio.IncompleteReadError, OSError):
        return "closed"
    return "replied"


# ----------------------------------------------------------------------------- attacks


async def idle_sockets(address: str, n: int) -> list[asyncio.StreamWriter]:
    """``n`` connections opened and left silent (the caller closes them): the listener must
    still admit a real client, reclaiming an idle one if it is full."""
    host, port = address.rsplit(":", 1)
    out = []
    for _ in range(n):
        with contextlib.suppress(OSError, TimeoutError):
            out.append((await asyncio.wait_for(asyncio.open_connection(host, int(port)),
                                               CONNECT_TIMEOUT_S))[1])
    return out


async def slow_sockets(address: str, n: int, seconds: float, every_s: float = 0.1) -> int:
    """``n`` connections that each send a valid request one byte every ``every_s`` for
    ``seconds`` (slowloris), and then the size of a frame whose body never comes; how many
    the listener closed meanwhile (it may: none is owed a reply, or the frame is too big)."""
    host, port = address.rsplit(":", 1)
    closed = 0

    async def trickle() -> None:
        nonlocal closed
        try:
            _, writer = await asyncio.open_connection(host, int(port))
        except OSError:
            return
        data = API_VERSIONS_V0 + struct.pack(">i", 64 << 10)
        deadline = time.monotonic() + seconds
        try:
            for i in range(len(data)):
                if time.monotonic() > deadline:
                    break
                writer.write(data[i:i + 1])
                await writer.drain()
                await asyncio.sleep(every_s)
        except OSError:
            closed += 1
        finally:
            writer.close()

    await asyncio.gather(*(trickle() for _ in range(n)))
    return closed


async def oversized_frames(address: str) -> dict[str, bool]:
    """Frames whose size prefix is past every bound (2^31-1, and past the 8 MiB request and
    512 KiB pre-authentication limits, their bytes really sent): whether each was refused by
    closing the connection, as it must be."""
    sizes = {"2^31-1": 2**31 - 1, "8 MiB + 1": (8 << 20) + 1, "512 KiB + 1": (512 << 10) + 1}
    out = {}
    for name, size in sizes.items():
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        body = b"\x00" * min(size, (512 << 10) + 1)
        try:
            writer.write(struct.pack(">i", size) + body)
            await writer.drain()
            out[name] = await asyncio.wait_for(reader.read(1), CONNECT_TIMEOUT_S) == b""
        except (ConnectionError, OSError):
            out[name] = True
        except TimeoutError:
            out[name] = False
        finally:
            writer.close()
    return out


# ------------------------------------------------------------------------------ checks


async def answers_api_versions(target: Target, within_s: float = 30.0) -> bool:
    """Whether a new connection to ``target`` (logged in if it has credentials) gets its
    ApiVersions answered, retrying until ``within_s`` (a full listener reclaims an idle
    connection only after it was idle ``admission.RECLAIM_IDLE_MS``)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            conn = await connect(target)
        except (ConnectionError, OSError, TimeoutError):
            await asyncio.sleep(0.5)
            continue
        try:
            if await _exchange(conn, API_VERSIONS_V0, CONNECT_TIMEOUT_S) == "replied":
                return True
        finally:
            conn[1].close()
        await asyncio.sleep(0.5)
    return False


async def fuzz_listeners(targets: list[Target], frames_total: int, seed: int,
                         vocabulary: Vocabulary, max_frame_bytes: int = 1 << 20,
                         workers: int = 4, reply_timeout_s: float = 1.0) -> dict[str, Tally]:
    """``frames_total`` fuzzed frames shared out among ``targets``, all fuzzed at once, each
    from a stream of its own (seed ``seed``, then the target's place): the tally of each."""
    share, extra = divmod(frames_total, len(targets))

    async def one(i: int, target: Target) -> tuple[str, Tally]:
        stream = frames(seed * 1000 + i, vocabulary, max_frame_bytes)
        return target.label, await send_frames(target, stream, share + (i < extra), workers,
                                               reply_timeout_s)

    return dict(await asyncio.gather(*(one(i, t) for i, t in enumerate(targets))))
