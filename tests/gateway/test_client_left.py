"""A client that leaves is owed nothing: its connection ends and the work on its requests
stops (issue 30). A partition's listener forwards what it does not serve to the gateway, a Ray
call whose arguments Ray keeps until it is answered; the wire fuzzer's clients gave up after
a second and sent more, and each forward they left stayed pending, with its connection and its
slot, until the gateway answered (a partition grew 0.5 MiB/s, in memory in use). No Ray here:
a partition's listener over ``MemoryStorage``, real sockets, and a gateway that never answers
in place of the Ray call."""

from __future__ import annotations

import asyncio
import socket
import time

from actors.tools.wire_tokens import framed, request_tokens
from tests.gateway.partition_listener import partition_listener

CLIENTS = 20
WAIT_S = 30.0
# ListOffsets v1, forwarded to the gateway by a partition's listener.
LIST_OFFSETS = framed(b"".join(t.data for t in request_tokens(2, 1, {
    "replica_id": -1,
    "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})))


async def _left_behind() -> dict[str, int]:
    """``CLIENTS`` clients each send a forwarded request and close before its answer: what the
    listener still holds for them once it settles (or ``WAIT_S`` passes)."""
    held = {"forwards": 0, "cancelled": 0}

    async def gateway_never_answers(self, req) -> bytes | None:
        held["forwards"] += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            held["cancelled"] += 1
            raise
        return None

    async with partition_listener() as served:
        listener = served.listener
        listener._forward = gateway_never_answers.__get__(listener)

        def send_and_leave() -> None:
            for n in range(1, CLIENTS + 1):
                with socket.create_connection((served.host, served.port)) as sock:
                    sock.sendall(LIST_OFFSETS)
                    deadline = time.monotonic() + WAIT_S  # left once its forward is under way
                    while held["forwards"] < n and time.monotonic() < deadline:
                        time.sleep(0.01)

        await asyncio.to_thread(send_and_leave)
        deadline = time.monotonic() + WAIT_S
        while (listener.admission.open or held["cancelled"] < held["forwards"]) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return {**held, "connections": listener.admission.open}


def test_a_client_that_leaves_has_its_connection_closed_and_its_forwards_cancelled():
    left = asyncio.run(_left_behind())
    assert left == {"forwards": CLIENTS, "cancelled": CLIENTS, "connections": 0}

