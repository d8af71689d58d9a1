"""Where SASL/PLAIN's password checks run: off the event loop, a few at a time, fairly per host.

A PLAIN attempt costs PBKDF2 (``protocol.security.plain.PasswordCheck``: thousands of HMAC
rounds) and comes from a client that has not authenticated. Run on the listener's event loop,
a client sending attempts in a loop would stall every other connection of that listener. So
checks run on a small thread pool of this process (``MAX_THREADS``: hashlib releases the GIL
while it hashes), and one host has at most ``MAX_CHECKS_PER_HOST`` of them waiting or running
at once: the rest of its attempts wait their turn on the loop (cheaply, as coroutines), so one
host cannot fill the pool's queue ahead of every other. A failed attempt is answered, and its
connection closed, only after Kafka's ``connection.failed.authentication.delay.ms``
(``GatewayOptions.connection_failed_authentication_delay_ms``): the connection does that.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from protocol.security.plain import PasswordCheck

MAX_THREADS = 2
MAX_CHECKS_PER_HOST = 2


class PasswordChecks:
    """Runs ``PasswordCheck``s off the loop (see the module docstring). Bounded: at most
    ``max_threads`` run at once, and at most ``per_host`` per host are queued or running; a
    host's entry lives only while it has attempts waiting."""

    def __init__(self, max_threads: int = MAX_THREADS,
                 per_host: int = MAX_CHECKS_PER_HOST) -> None:
        self._max_threads = max_threads
        self._per_host = per_host
        self._executor: ThreadPoolExecutor | None = None  # made on first use
        self._hosts: dict[str, tuple[asyncio.Semaphore, int]] = {}

    async def run(self, work: PasswordCheck, host: str) -> bool:
        """``work.run()``, on a thread of the pool, in ``host``'s turn."""
        gate, waiting = self._hosts.get(host, (None, 0))
        if gate is None:
            gate = asyncio.Semaphore(self._per_host)
        self._hosts[host] = (gate, waiting + 1)
        try:
            async with gate:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self._max_threads,
                                                        thread_name_prefix="sasl-plain")
                return await asyncio.get_running_loop().run_in_executor(
                    self._executor, work.run)
        finally:
            gate, waiting = self._hosts[host]
            if waiting == 1:
                del self._hosts[host]
            else:
                self._hosts[host] = (gate, waiting - 1)


# One per process: every listener of a gateway or a partition actor shares its threads.
PASSWORD_CHECKS = PasswordChecks()
