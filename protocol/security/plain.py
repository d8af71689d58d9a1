"""SASL/PLAIN (RFC 4616) as Kafka's broker checks it.

The client sends ``authzid NUL authcid NUL password`` once; Kafka accepts an authorization id
only when it is empty or the user's own name. The password is checked against the user's
stored SCRAM credential (``scram.verify_password``), so Cohort keeps one credential per user
for both mechanisms and never a password.

Checking a password is PBKDF2: thousands of HMAC rounds, milliseconds of CPU, asked for by a
client that has not authenticated yet. So ``check`` only parses the message and returns the
work as a value (``PasswordCheck``), which the caller runs where it cannot stall anyone (off
its event loop: ``actors.gateway.password_checks``). An unknown user is checked against a
dummy credential of the default cost, so its answer costs what a known user's wrong password
costs and its timing tells nobody which names exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.security.scram import (
    MIN_ITERATIONS,
    ScramCredential,
    make_credential,
    verify_password,
)

MECHANISM = "PLAIN"
MAX_MESSAGE_BYTES = 4096
# What an unknown user's password is checked against: the cost of a user made with the
# default iterations (``cohort users --add``: MIN_ITERATIONS), matching no password (its salt
# is fixed and public, but no user's stored key is derived from it).
UNKNOWN_USER = make_credential("\x00unknown user\x00", b"\x00" * 16, MIN_ITERATIONS)


FAILED = "authentication failed: invalid username or password"


class PlainError(Exception):
    pass


@dataclass(frozen=True)
class PasswordCheck:
    """A PLAIN attempt's remaining work: ``run()`` says whether ``password`` is ``user``'s.
    Pure CPU (PBKDF2, ``credential.iterations`` rounds), safe to run on any thread."""

    user: str
    password: str = field(repr=False)
    credential: ScramCredential = field(repr=False)
    known: bool

    def run(self) -> bool:
        matches = verify_password(self.credential, self.password)
        return matches and self.known


def check(message: bytes, lookup: Callable[[str], ScramCredential | None]) -> PasswordCheck:
    """The password check ``message`` asks for (not run yet); ``PlainError`` if it is not a
    well-formed PLAIN message."""
    if len(message) > MAX_MESSAGE_BYTES:
        raise PlainError("PLAIN message too long")
    parts = message.split(b"\x00")
    if len(parts) != 3:
        raise PlainError("PLAIN needs authzid NUL user NUL password")
    try:
        authzid, user, password = (p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise PlainError("PLAIN fields are UTF-8") from None
    if not user or not password:
        raise PlainError("user name and password must not be empty")
    if authzid and authzid != user:
        raise PlainError("the authorization id must be the user name")
    cred = lookup(user)
    return PasswordCheck(user, password, cred or UNKNOWN_USER, cred is not None)


def authenticate(message: bytes, lookup: Callable[[str], ScramCredential | None]) -> str:
    """``check`` run here and now: the authenticated user name, or ``PlainError``."""
    work = check(message, lookup)
    if not work.run():
        raise PlainError(FAILED)
    return work.user
