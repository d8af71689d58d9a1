"""The client side of SCRAM-SHA-256, written apart from the server's, for the tests."""

from __future__ import annotations

import base64
import hashlib
import hmac


class ScramClient:
    def __init__(self, user: str, password: str, nonce: str = "client-nonce") -> None:
        self.user, self.password, self.nonce = user, password, nonce
        self.bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(part.split("=", 1) for part in text.split(","))
        salted = hashlib.pbkdf2_hmac("sha256", self.password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.bare},{text},{without_proof}".encode()
        signature = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
        self.server_signature = hmac.new(server_key, auth, hashlib.sha256).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
