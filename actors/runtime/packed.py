"""Requests and replies as bytes on the Ray path: Cohort's own callers pickle them themselves.

Ray hands an argument or a return value that msgpack cannot take (every message here is a
dataclass) to cloudpickle with a fresh pickler each time: measured on a 2-core VM, a call
carrying a heartbeat and its reply took ~150 µs longer than a no-op call, of ~1.1 ms, and
the same call carrying them pickled (``pickle.dumps``, ~2 µs; bytes take Ray's msgpack path)
no longer than the no-op (``bench/ray_call.py``). A client actor that hands its own handle
along so that the partition can wake it (``wakers.py``) paid ~150 µs more: Ray serializes and
registers the handle again on every call. As a ``waker_token`` (the handle pickled once by
the client) the partition resolves it once and keeps it (``WakerTokens``).

Nothing weakens: pickle is what Ray itself unpickles every argument with, so a caller that can
call the partition could already make it unpickle anything; the methods that take objects
(``handle``, ``handle_batch``) stay for every other caller and answer the same.
"""

from __future__ import annotations

import pickle

from ray import cloudpickle

# Client actors a partition keeps resolved handles of (TigerStyle: every cache has a bound).
# Past it the cache starts over: a forgotten token only costs one resolution more.
MAX_WAKER_TOKENS = 10_000


def pack(value: object) -> bytes:
    """``value`` as the bytes a packed call carries. What ``pickle`` refuses (a class defined
    in a function, as a test's odd request is) goes through cloudpickle, as Ray would have
    sent it: ``Cluster.call`` answers whatever it is handed, as before."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> object:
    """The value ``pack`` made ``data`` from."""
    return pickle.loads(data)


def waker_token(handle: object) -> bytes:
    """A client actor's handle as a token a partition resolves once (pickling an actor handle
    outside Ray's own serialization is supported: it is how Ray's ``__reduce__`` works)."""
    return pickle.dumps(handle, protocol=pickle.HIGHEST_PROTOCOL)


class WakerTokens:
    """A partition's resolved waker tokens: the first call from a client actor pays the
    handle's registration (~2 ms), the next ones a dictionary lookup."""

    def __init__(self, max_tokens: int = MAX_WAKER_TOKENS) -> None:
        assert max_tokens > 0
        self._max_tokens = max_tokens
        self._handles: dict[bytes, object] = {}

    def __len__(self) -> int:
        return len(self._handles)

    def resolve(self, token: bytes | None) -> object | None:
        """The handle ``token`` names (None for None)."""
        if token is None:
            return None
        handle = self._handles.get(token)
        if handle is None:
            if len(self._handles) >= self._max_tokens:
                self._handles.clear()
            handle = self._handles[token] = pickle.loads(token)
        return handle
