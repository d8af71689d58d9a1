"""Kafka's framing: every request and response is a 4-byte big-endian size, then that many bytes.

``FrameReader`` is the pure half of a connection's read side (h11's way): bytes go in as they
arrive, whole frames come out, and a size no well-behaved client sends (negative, or above
``MAX_REQUEST_BYTES``) raises ``FrameError`` before any of the frame is buffered, so one client
can make the gateway hold at most one maximum-size frame per connection.
"""

from __future__ import annotations

import struct

# The stated maximum request size. Kafka's ``socket.request.max.bytes`` defaults to 100 MiB
# because produce requests carry record batches; the gateway takes no records, and its
# largest honest request (an OffsetCommit of every partition of many topics) is far below
# 8 MiB. A larger size is refused by closing the connection, as Kafka does.
MAX_REQUEST_BYTES = 8 << 20
_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be framed any further: the connection must close."""


class FrameReader:
    """Splits a byte stream into frames; bounded by ``max_bytes`` per frame."""

    def __init__(self, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The frames ``data`` completes, in order; raises ``FrameError`` on a bad size."""
        self._buf += data
        frames = []
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            if size < 0 or size > self.max_bytes:
                raise FrameError(
                    f"frame size {size} is outside [0, {self.max_bytes}] (the maximum request)"
                )
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)


def frame(payload: bytes) -> bytes:
    """``payload`` with its size in front, ready for the socket."""
    return _SIZE.pack(len(payload)) + payload
