"""SASL attempts cannot stall a listener or tell names apart: PLAIN's hashing runs off the
event loop, a bounded few per host; an unknown user costs a hash like a known one; a failed
attempt is answered after Kafka's ``connection.failed.authentication.delay.ms``. No Ray: real
sockets, a stand-in listener. Every wait polls a condition with a deadline."""

from __future__ import annotations

import asyncio
import base64
import socket
import struct
import threading
import time

from protocol.security import plain
from protocol.security.sasl import SaslSession
from protocol.security.scram import make_credential
from protocol.wire.framing import frame
from tests.gateway.scram_client import ScramClient
from tests.gateway.test_connection import _read_frames
from tests.gateway.test_connection_deadlines import _api_versions, _Core, _server, _until

WAIT_S = 10
ALICE = make_credential("alice-secret", b"salt-of-alice-16", 4096)
USERS = {"alice": ALICE}


class _Users(_Core):
    def user(self, name: str):
        return USERS.get(name)


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def _handshake(correlation_id: int) -> bytes:
    return frame(struct.pack(">hhi", 17, 1, correlation_id) + _string("t") + _string("PLAIN"))


def _authenticate(correlation_id: int, token: bytes) -> bytes:
    header = struct.pack(">hhi", 36, 0, correlation_id) + _string("t")
    return frame(header + struct.pack(">i", len(token)) + token)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(WAIT_S)
    return sock


def test_a_plain_password_is_hashed_off_the_event_loop(monkeypatch):
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    verify = plain.verify_password

    def slow_verify(credential, password) -> bool:  # a hash that takes as long as we say
        started.set()
        release.wait(5)
        finished.set()
        return verify(credential, password)

    monkeypatch.setattr(plain, "verify_password", slow_verify)

    async def scenario() -> bool:
        server, port = await _server(_Users(sasl_mechanisms=("PLAIN",)))
        hashing, other = _connect(port), _connect(port)
        hashing.sendall(_handshake(1))
        assert await asyncio.to_thread(_read_frames, hashing, 1) == [1]
        hashing.sendall(_authenticate(2, b"\x00alice\x00alice-secret"))
        await _until(started.is_set, "the hash to start")
        other.sendall(_api_versions(9))  # another client, while the hash runs
        assert await asyncio.to_thread(_read_frames, other, 1) == [9]
        answered_while_hashing = not finished.is_set()
        release.set()
        assert await asyncio.to_thread(_read_frames, hashing, 1) == [2]
        server.close()
        return answered_while_hashing

    assert asyncio.run(scenario()), "the listener served nobody while a password was hashed"


def test_an_unknown_user_costs_a_password_hash_like_a_known_one(monkeypatch):
    hashed: list[str] = []
    verify = plain.verify_password

    def counting(credential, password) -> bool:
        hashed.append(password)
        return verify(credential, password)

    monkeypatch.setattr(plain, "verify_password", counting)
    for user in ("alice", "mallory"):
        session = SaslSession(["PLAIN"], USERS.get, lambda: "n")
        session.handshake({"mechanism": "PLAIN"})
        work = session.authenticate({"auth_bytes": f"\x00{user}\x00wrong".encode()})
        reply = session.resume(work, work.run())
        assert reply.body["error_code"] == 58 and reply.close_after
    assert hashed == ["wrong", "wrong"]  # one hash each: the same work, the same answer


def test_an_unknown_scram_user_gets_a_stable_challenge_and_fails_only_at_the_proof():
    challenges = []
    for _ in range(2):
        session = SaslSession(["SCRAM-SHA-256"], USERS.get, lambda: "srv", b"process key")
        session.handshake({"mechanism": "SCRAM-SHA-256"})
        client = ScramClient("mallory", "guess")
        first = session.authenticate({"auth_bytes": client.first()})
        assert first.body["error_code"] == 0 and not first.close_after
        challenges.append(first.body["auth_bytes"])
        final = session.authenticate({"auth_bytes": client.final(first.body["auth_bytes"])})
        assert final.body["error_code"] == 58 and final.close_after
    salts = [dict(p.split(b"=", 1) for p in c.split(b","))[b"s"] for c in challenges]
    assert salts[0] == salts[1] and len(base64.b64decode(salts[0])) == 16


def test_a_failed_authentication_is_answered_and_closed_only_after_the_delay():
    async def scenario() -> float:
        core = _Users(sasl_mechanisms=("PLAIN",), connection_failed_authentication_delay_ms=400)
        server, port = await _server(core)
        client = _connect(port)
        client.sendall(_handshake(1))
        assert await asyncio.to_thread(_read_frames, client, 1) == [1]
        sent = time.monotonic()
        client.sendall(_authenticate(2, b"\x00alice\x00wrong"))
        assert await asyncio.to_thread(_read_frames, client, 1) == [2]
        answered_after = time.monotonic() - sent
        assert await asyncio.to_thread(client.recv, 65536) == b""  # then closed
        server.close()
        return answered_after

    assert asyncio.run(scenario()) >= 0.4


def test_one_host_runs_at_most_its_share_of_password_checks_at_once():
    running: dict[str, int] = {"a": 0, "b": 0}
    lock, release = threading.Lock(), threading.Event()

    class Work:
        def __init__(self, host: str) -> None:
            self.host = host

        def run(self) -> bool:
            with lock:
                running[self.host] += 1
            release.wait(WAIT_S)
            return True

    async def scenario() -> dict[str, int]:
        from actors.gateway.password_checks import PasswordChecks  # (new with this bound)

        checks = PasswordChecks(max_threads=4, per_host=2)
        tasks = [asyncio.ensure_future(checks.run(Work(h), h)) for h in "aaaaab"]
        await _until(lambda: running["a"] + running["b"] == 3, "three checks running")
        seen = dict(running)
        release.set()
        assert all(await asyncio.gather(*tasks))
        assert running == {"a": 5, "b": 1} and not checks._hosts
        return seen

    assert asyncio.run(scenario()) == {"a": 2, "b": 1}
