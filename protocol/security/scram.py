"""SCRAM-SHA-256 (RFC 5802, RFC 7677) as Kafka's broker runs it, and the stored credential.

A user is stored as Kafka stores SCRAM users: salt, iteration count, StoredKey and ServerKey,
never the password. ``ScramServer`` is the broker's side of one exchange as a pure state
machine: client-first in, server-first out; client-final in, server-final out; any deviation
raises ``ScramError`` and the exchange is over. The caller supplies the random parts (salt,
server nonce), so everything here is deterministic. ``verify_password`` lets SASL/PLAIN check
a password against the same credential, so one user store serves both mechanisms.

An unknown user is not refused at client-first (that would tell a client which names exist):
it gets a server-first like any user's, with a salt derived from its name and the caller's
``mock_key`` (so asking twice gives the same salt, as for a real user), and fails at the proof
(RFC 5802 section 5.1's "mock" exchange).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

MECHANISM = "SCRAM-SHA-256"
# Kafka's bounds for SCRAM-SHA-256 iterations.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
MAX_MESSAGE_BYTES = 4096


class ScramError(Exception):
    """The exchange failed; the message is safe to log (it never holds a secret)."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def as_list(self) -> list:
        return [self.salt, self.iterations, self.stored_key, self.server_key]

    @classmethod
    def from_list(cls, values: list) -> ScramCredential:
        salt, iterations, stored, server = values
        return cls(bytes(salt), int(iterations), bytes(stored), bytes(server))


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def make_credential(password: str, salt: bytes, iterations: int = MIN_ITERATIONS
                    ) -> ScramCredential:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = _hmac(salted, b"Client Key")
    return ScramCredential(salt, iterations, hashlib.sha256(client_key).digest(),
                           _hmac(salted, b"Server Key"))


def verify_password(cred: ScramCredential, password: str) -> bool:
    candidate = make_credential(password, cred.salt, cred.iterations)
    return hmac.compare_digest(candidate.stored_key, cred.stored_key)


def _mock_credential(key: bytes, name: str) -> ScramCredential:
    """An unknown user's stand-in: a salt stable per ``name`` (and ``key``), and keys no
    proof is checked into success (``ScramServer`` fails an unknown user whatever it sends)."""
    digest = _hmac(key, b"mock " + name.encode())
    return ScramCredential(digest[:16], MIN_ITERATIONS, _hmac(digest, b"Stored Key"),
                           _hmac(digest, b"Server Key"))


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"malformed SCRAM attribute {part[:20]!r}")
        out[key] = value
    return out


def _sasl_name(name: str) -> str:
    """RFC 5802's saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is bad."""
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed user name")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM-SHA-256 exchange, server side."""

    def __init__(self, lookup: Callable[[str], ScramCredential | None],
                 server_nonce: str, mock_key: bytes = b"") -> None:
        self._lookup = lookup
        self._mock_key = mock_key
        self._known = False
        self._server_nonce = server_nonce
        self._state = "first"
        self.username: str | None = None
        self._cred: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def step(self, message: bytes) -> bytes:
        """The reply to the client's next message."""
        if len(message) > MAX_MESSAGE_BYTES:
            raise ScramError("SCRAM message too long")
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("SCRAM messages are UTF-8") from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        raise ScramError("the SCRAM exchange is over")

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def _first(self, text: str) -> bytes:
        self._state = "failed"
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y"):
            raise ScramError("unsupported GS2 header (channel binding is not offered)")
        attrs = _attributes(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ScramError("client-first needs n= and r=")
        name = _sasl_name(attrs["n"])
        if authzid and authzid != f"a={attrs['n']}":
            raise ScramError("the authorization id must be the user name")
        cred = self._lookup(name)
        self._known = cred is not None
        if cred is None:
            cred = _mock_credential(self._mock_key, name)
        self.username, self._cred = name, cred
        self._nonce = attrs["r"] + self._server_nonce
        self._client_first_bare = bare
        salt = base64.b64encode(cred.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={cred.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        self._state = "failed"
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final needs a proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ScramError("nonce mismatch")
        if attrs.get("c") not in ("biws", "eSws"):  # base64 of "n,," and "y,,"
            raise ScramError("channel binding mismatch")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("malformed proof") from None
        cred = self._cred
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("authentication failed")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        matches = hmac.compare_digest(hashlib.sha256(client_key).digest(), cred.stored_key)
        if not matches or not self._known:
            raise ScramError("authentication failed")
        self._state = "done"
        server_signature = base64.b64encode(_hmac(cred.server_key, auth_message)).decode()
        return f"v={server_signature}".encode()
