"""SASL/PLAIN (RFC 4616) as Kafka's broker checks it.

The client sends ``authzid NUL authcid NUL password`` once; Kafka accepts an authorization id
only when it is empty or the user's own name. The password is checked against the user's
stored SCRAM credential (``scram.verify_password``), so Cohort keeps one credential per user
for both mechanisms and never a password.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.security.scram import ScramCredential, verify_password

MECHANISM = "PLAIN"
MAX_MESSAGE_BYTES = 4096


class PlainError(Exception):
    pass


def authenticate(message: bytes, lookup: Callable[[str], ScramCredential | None]) -> str:
    """The authenticated user name, or ``PlainError``."""
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
    if cred is None or not verify_password(cred, password):
        raise PlainError("authentication failed: invalid username or password")
    return user
