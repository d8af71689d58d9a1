"""One connection's SASL state, as Kafka's ``SaslServerAuthenticator`` keeps it (pure).

Kafka's order: optionally ApiVersions, then SaslHandshake naming a mechanism, then one or more
SaslAuthenticate rounds carrying the mechanism's tokens. Until the exchange completes, any
other request closes the connection; a failed exchange is answered with
SASL_AUTHENTICATION_FAILED and then the connection closes. The replies are plain Kafka bodies
(``wire.codec`` writes them); the caller supplies the server nonce, so this is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode as E

from protocol.security import plain, scram
from protocol.security.scram import ScramCredential

MECHANISMS = (plain.MECHANISM, scram.MECHANISM)


@dataclass
class SaslReply:
    body: dict
    close_after: bool = False


class SaslSession:
    """Handshake, then authenticate; ``principal`` is set once authenticated."""

    def __init__(self, mechanisms: Iterable[str],
                 lookup: Callable[[str], ScramCredential | None],
                 server_nonce: Callable[[], str]) -> None:
        self.mechanisms = [mech for mech in MECHANISMS if mech in set(mechanisms)]
        self._lookup = lookup
        self._server_nonce = server_nonce
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: scram.ScramServer | None = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def handshake(self, body: dict) -> SaslReply:
        if self.mechanism is not None or self.authenticated:
            return SaslReply({"error_code": E.illegal_sasl_state.value,
                              "mechanisms": self.mechanisms}, close_after=True)
        wanted = body.get("mechanism", "")
        if wanted not in self.mechanisms:
            return SaslReply({"error_code": E.unsupported_sasl_mechanism.value,
                              "mechanisms": self.mechanisms}, close_after=True)
        self.mechanism = wanted
        if wanted == scram.MECHANISM:
            self._scram = scram.ScramServer(self._lookup, self._server_nonce())
        return SaslReply({"error_code": 0, "mechanisms": self.mechanisms})

    def authenticate(self, body: dict) -> SaslReply:
        if self.mechanism is None or self.authenticated:
            return self._fail(E.illegal_sasl_state, "SaslAuthenticate before SaslHandshake "
                              "or after authentication completed.")
        token = body.get("auth_bytes", b"")
        if self.mechanism == plain.MECHANISM:
            try:
                self.principal = f"User:{plain.authenticate(token, self._lookup)}"
            except plain.PlainError as e:
                return self._fail(E.sasl_authentication_failed, f"Authentication failed: {e}")
            return SaslReply(_ok(b""))
        try:
            reply = self._scram.step(token)
        except scram.ScramError as e:
            return self._fail(E.sasl_authentication_failed, f"Authentication failed: {e}")
        if self._scram.complete:
            self.principal = f"User:{self._scram.username}"
        return SaslReply(_ok(reply))

    def _fail(self, error: E, message: str) -> SaslReply:
        return SaslReply({"error_code": error.value, "error_message": message,
                          "auth_bytes": b"", "session_lifetime": 0}, close_after=True)


def _ok(token: bytes) -> dict:
    return {"error_code": 0, "error_message": None, "auth_bytes": token, "session_lifetime": 0}
