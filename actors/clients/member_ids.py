"""A confluent-kafka consumer's member id, asked of librdkafka without holding the GIL.

``Consumer.memberid()`` calls ``rd_kafka_memberid()``, which sends a request to the consumer
group's thread and waits for its answer with no deadline, and confluent-kafka keeps the GIL
while it waits. That thread does not always answer: while a consumer closes, and after its
coordinator restarts (reported of the same call from .NET, confluent-kafka-dotnet#2461). A CI
run froze so for an hour, until its cap, in the teardown of a test that kills a coordinator
under real consumers: with the GIL held, every thread of the process stops, the test's own
timeouts and ``Thread.join`` deadlines included.

Called through ctypes, the same C function runs with the GIL released, and a helper thread
bounds the wait: past ``ASK_TIMEOUT_S`` the caller keeps the last id it knew and the helper is
left to finish (or not) on its own. The ``rd_kafka_t`` handle is the first field after the
object header of confluent-kafka's ``Handle``; it is read once and checked (a consumer handle,
named after the client id) before it is trusted, and without it the plain call is used.
"""

from __future__ import annotations

import ctypes
import threading
from functools import cache
from typing import Any

ASK_TIMEOUT_S = 2.0
RD_KAFKA_CONSUMER = 1


@cache
def _functions() -> Any:
    from actors.tools.kafka_mock import librdkafka

    lib = librdkafka()
    for name, restype in (("rd_kafka_memberid", ctypes.c_void_p),
                          ("rd_kafka_name", ctypes.c_char_p),
                          ("rd_kafka_type", ctypes.c_int)):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, [ctypes.c_void_p]
    lib.rd_kafka_mem_free.restype = None
    lib.rd_kafka_mem_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


def _handle(consumer: Any, client_id: str) -> int | None:
    """The consumer's ``rd_kafka_t*``, or None when the object is not laid out as expected."""
    try:
        lib = _functions()
        rk = ctypes.c_void_p.from_address(id(consumer) + object.__basicsize__).value
        if not rk or lib.rd_kafka_type(rk) != RD_KAFKA_CONSUMER:
            return None
        name = (lib.rd_kafka_name(rk) or b"").decode(errors="replace")
    except (OSError, RuntimeError, AttributeError):
        return None
    return rk if name.startswith(f"{client_id}#consumer-") else None


class MemberIds:
    """Asks one consumer's member id with a deadline (see the module docstring)."""

    def __init__(self, consumer: Any, client_id: str) -> None:
        self._consumer = consumer
        self._rk = _handle(consumer, client_id)
        self.last = ""

    def ask(self) -> str:
        """The member id librdkafka holds now; the last one known when it does not answer."""
        if self._rk is None:
            self.last = self._consumer.memberid() or ""
            return self.last
        answer: list[str] = []
        helper = threading.Thread(target=self._ask_c, args=(answer,), daemon=True,
                                  name="rd_kafka_memberid")
        helper.start()
        helper.join(ASK_TIMEOUT_S)
        if answer:
            self.last = answer[0]
        return self.last

    def _ask_c(self, answer: list[str]) -> None:
        lib = _functions()
        p = lib.rd_kafka_memberid(self._rk)
        if not p:
            answer.append("")
            return
        try:
            answer.append(ctypes.string_at(p).decode(errors="replace"))
        finally:
            lib.rd_kafka_mem_free(self._rk, p)
