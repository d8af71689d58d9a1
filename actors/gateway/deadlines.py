"""A connection's deadlines, as Kafka's broker keeps them (``actors.gateway.connection``'s
module docstring says which): mixed into ``Connection``, whose state they read (``_loop``,
``_last_active``, ``_owed``, ``_failed``, ``principal``, ``_authenticate_by``, ``_idle_s``,
``_deadline``, ``core``, ``writer``, ``client_host``) and whose ``_fail`` they call. Their own
module so the connection's reading and serving fit in one reader's mind.
"""

from __future__ import annotations

import logging

log = logging.getLogger("actors.gateway.connection")


class ConnectionDeadlines:
    """The idle and authentication deadlines, and closing for a newcomer
    (``admission.Reclaimable``)."""

    def idle_since(self) -> float | None:
        """The loop time since which nothing was read from this connection and nothing is
        owed to it; None while a reply is owed (``admission.Reclaimable``)."""
        return None if self._owed or self._failed is not None else self._last_active

    def reclaim(self, why: str) -> None:
        """Close now, unsent replies dropped (``admission.Reclaimable``)."""
        log.info("closing %s: %s", self.client_host, why)
        self._fail(why)
        self.writer.transport.abort()

    def _next_deadline(self) -> float:
        due = self._last_active + self._idle_s
        return min(due, self._authenticate_by) if self.principal is None else due

    def _at_deadline(self) -> None:
        """Close the connection if a deadline passed (idle for ``connections_max_idle_ms``,
        or not authenticated in ``authentication_timeout_ms``), else look again later."""
        now = self._loop.time()
        if self._failed is not None:
            return
        if self.principal is None and now >= self._authenticate_by:
            self.reclaim("SASL authentication not completed in "
                         f"{self.core.options.authentication_timeout_ms} ms")
            return
        since = self.idle_since()
        if since is not None and now - since >= self._idle_s:
            self.reclaim(f"idle for {self.core.options.connections_max_idle_ms} ms "
                         "(connections_max_idle_ms)")
            return
        due = self._next_deadline() if since is not None else now + self._idle_s
        if self.principal is None:
            due = min(due, self._authenticate_by)
        self._deadline = self._loop.call_at(max(due, now + 0.001), self._at_deadline)
