"""Kafka's framing: every request and response is a 4-byte big-endian size, then that many bytes.

``FrameReader`` is the pure half of a connection's read side (h11's way): bytes go in as they
arrive, whole frames come out, and a size no well-behaved client sends (negative, or above
``max_bytes``) raises ``FrameError`` as soon as its 4-byte size has arrived, before the body is
waited for, so one client can make the gateway hold at most one maximum-size frame per
connection. The bound may change between frames: until a SASL client has authenticated it is
``MAX_UNAUTHENTICATED_BYTES`` (Kafka's ``sasl.server.max.receive.size``), then the listener's
maximum request; ``feed`` yields frames one at a time, so each frame's size is checked against
the bound as it stands once the frame before it was served.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

# The stated maximum request size. Kafka's ``socket.request.max.bytes`` defaults to 100 MiB
# because produce requests carry record batches; the gateway takes no records, and its
# largest honest request (an OffsetCommit of every partition of many topics) is far below
# 8 MiB. A larger size is refused by closing the connection, as Kafka does.
MAX_REQUEST_BYTES = 8 << 20
# Kafka's ``sasl.server.max.receive.size``: the largest frame read before authentication (an
# ApiVersions or a SASL token is a few hundred bytes; Kafka refuses more than 512 KiB).
MAX_UNAUTHENTICATED_BYTES = 512 << 10
_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be framed any further: the connection must close. ``size``: the
    size prefix that was out of bounds."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


class FrameReader:
    """Splits a byte stream into frames; bounded by ``min_bytes`` and ``max_bytes`` per frame.
    ``sized``: frames keep their size prefix (a relay passing replies on as they came)."""

    def __init__(self, max_bytes: int = MAX_REQUEST_BYTES, min_bytes: int = 0,
                 sized: bool = False) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self._skip = 0 if sized else 4
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The frames ``data`` completes, in order, one at a time (each checked against
        ``max_bytes`` as it is when the frame is pulled); ``FrameError`` on a bad size."""
        if not self._buf and len(data) >= 4 and _SIZE.unpack_from(data, 0)[0] + 4 == len(data):
            self._check(len(data) - 4)  # one whole frame, the common case: sliced, not buffered
            yield bytes(data[self._skip:])
            return
        self._buf += data
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            self._check(size)
            if len(self._buf) < 4 + size:
                return
            with memoryview(self._buf) as view:  # one copy (a bytearray slice is a second)
                frame = bytes(view[self._skip : 4 + size])
            if len(self._buf) == 4 + size:
                self._buf = bytearray()  # a big frame's buffer is not kept for the next
            else:
                del self._buf[: 4 + size]
            yield frame

    def _check(self, size: int) -> None:
        if size < self.min_bytes or size > self.max_bytes:
            raise FrameError(
                f"frame size {size} is outside [{self.min_bytes}, {self.max_bytes}] (the "
                "maximum frame this connection reads now)", size
            )

    @property
    def next_size(self) -> int | None:
        """The size of the frame begun in the buffer (checked already), or None until its
        4-byte size has arrived: a listener may wait before reading a big frame's body."""
        return _SIZE.unpack_from(self._buf, 0)[0] if len(self._buf) >= 4 else None

    @property
    def buffered(self) -> int:
        return len(self._buf)


def frame(payload: bytes) -> bytes:
    """``payload`` with its size in front, ready for the socket."""
    return _SIZE.pack(len(payload)) + payload
