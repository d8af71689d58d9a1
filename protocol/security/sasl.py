"""One connection's SASL state, as Kafka's ``SaslServerAuthenticator`` keeps it (pure).

Kafka's order: optionally ApiVersions, then SaslHandshake naming a mechanism, then one or more
SaslAuthenticate rounds carrying the mechanism's tokens. Until the exchange completes, any
other request closes the connection; a failed exchange is answered with
SASL_AUTHENTICATION_FAILED and then the connection closes. The replies are plain Kafka bodies
(``wire.codec`` writes them); the caller supplies the server nonce, so this is deterministic.

A PLAIN token is not answered at once: ``authenticate`` returns the password check it needs
(``plain.PasswordCheck``, PBKDF2), the caller runs it where it stalls nobody and hands the
outcome to ``resume``, which gives the reply. (SCRAM's server side costs a few HMACs per
round and answers at once.)
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
                 server_nonce: Callable[[], str], mock_key: bytes = b"") -> None:
        """``mock_key``: a secret of this process, from which an unknown SCRAM user's salt
        is derived (``scram.ScramServer``)."""
        self.mechanisms = [mech for mech in MECHANISMS if mech in set(mechanisms)]
        self._lookup = lookup
        self._server_nonce = server_nonce
        self._mock_key = mock_key
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: scram.ScramServer | None = None
        self._check: plain.PasswordCheck | None = None  # handed out, not resumed yet

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
            self._scram = scram.ScramServer(self._lookup, self._server_nonce(),
                                           self._mock_key)
        return SaslReply({"error_code": 0, "mechanisms": self.mechanisms})

    def authenticate(self, body: dict) -> SaslReply | plain.PasswordCheck:
        """The reply to a SaslAuthenticate, or (PLAIN) the password check to run first and
        hand to ``resume``."""
        if self.mechanism is None or self.authenticated:
            return self._fail(E.illegal_sasl_state, "SaslAuthenticate before SaslHandshake "
                              "or after authentication completed.")
        token = body.get("auth_bytes", b"")
        if self.mechanism == plain.MECHANISM:
            try:
                self._check = plain.check(token, self._lookup)
            except plain.PlainError as e:
                return self._fail(E.sasl_authentication_failed, f"Authentication failed: {e}")
            return self._check
        try:
            reply = self._scram.step(token)
        except scram.ScramError as e:
            return self._fail(E.sasl_authentication_failed, f"Authentication failed: {e}")
        if self._scram.complete:
            self.principal = f"User:{self._scram.username}"
        return SaslReply(_ok(reply))

    def resume(self, work: plain.PasswordCheck, passed: bool) -> SaslReply:
        """The reply to the SaslAuthenticate that asked for ``work``, once it ran and
        ``passed`` (or not)."""
        if work is not self._check or self.authenticated:
            return self._fail(E.illegal_sasl_state, "no password check is pending")
        self._check = None
        if not passed:
            return self._fail(E.sasl_authentication_failed,
                              f"Authentication failed: {plain.FAILED}")
        self.principal = f"User:{work.user}"
        return SaslReply(_ok(b""))

    def _fail(self, error: E, message: str) -> SaslReply:
        return SaslReply({"error_code": error.value, "error_message": message,
                          "auth_bytes": b"", "session_lifetime": 0}, close_after=True)


def _ok(token: bytes) -> dict:
    return {"error_code": 0, "error_message": None, "auth_bytes": token, "session_lifetime": 0}
