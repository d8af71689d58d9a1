"""ACLs, SCRAM-SHA-256, SASL/PLAIN and the SASL session order, pure (``protocol/security``)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import CoordinatorError
from protocol.security import plain
from protocol.security.acls import AclBinding, AclFilter, authorize, check_binding
from protocol.security.sasl import SaslSession
from protocol.security.scram import ScramError, ScramServer, make_credential, verify_password
from tests.gateway.scram_client import ScramClient

ALICE = make_credential("alice-secret", b"0123456789abcdef")
USERS = {"alice": ALICE}


def allow(principal, op, rtype, name, pattern="LITERAL", permission="ALLOW"):
    return AclBinding(principal, rtype, name, op, permission, pattern)


# --------------------------------------------------------------------------------- ACLs


def test_with_no_matching_acl_the_answer_is_no():
    assert not authorize([], "User:alice", "h", "READ", "GROUP", "g1")


def test_an_allow_grants_its_operation_and_the_describe_it_implies():
    acls = [allow("User:alice", "READ", "GROUP", "g1")]
    assert authorize(acls, "User:alice", "h", "READ", "GROUP", "g1")
    assert authorize(acls, "User:alice", "h", "DESCRIBE", "GROUP", "g1")
    assert not authorize(acls, "User:alice", "h", "DELETE", "GROUP", "g1")
    assert not authorize(acls, "User:bob", "h", "READ", "GROUP", "g1")
    assert not authorize(acls, "User:alice", "h", "READ", "TOPIC", "g1")


def test_a_deny_wins_over_any_allow():
    acls = [allow("User:*", "ALL", "GROUP", "*"),
            allow("User:alice", "READ", "GROUP", "g1", permission="DENY")]
    assert not authorize(acls, "User:alice", "h", "READ", "GROUP", "g1")
    assert authorize(acls, "User:alice", "h", "READ", "GROUP", "g2")
    assert authorize(acls, "User:bob", "h", "READ", "GROUP", "g1")


def test_prefixed_patterns_match_by_prefix_and_super_users_pass_everything():
    acls = [allow("User:alice", "READ", "TOPIC", "orders-", pattern="PREFIXED")]
    assert authorize(acls, "User:alice", "h", "READ", "TOPIC", "orders-eu")
    assert not authorize(acls, "User:alice", "h", "READ", "TOPIC", "order")
    assert authorize([], "User:admin", "h", "ALTER", "CLUSTER", "kafka-cluster",
                     super_users=["User:admin"])


def test_a_binding_with_an_unknown_field_is_refused_naming_it():
    assert check_binding(allow("User:a", "read", "group", "g")).operation == "READ"
    for bad in (allow("User:a", "FLY", "GROUP", "g"), allow("alice", "READ", "GROUP", "g"),
                allow("User:a", "READ", "SCHEMA", "g"), allow("User:a", "READ", "GROUP", "")):
        with pytest.raises(CoordinatorError):
            check_binding(bad)


def test_filters_select_bindings_by_the_fields_they_set():
    b = allow("User:alice", "READ", "GROUP", "g1")
    assert AclFilter(principal="User:alice").matches(b)
    assert not AclFilter(resource_name="g2").matches(b)


# -------------------------------------------------------------------------------- SCRAM


def _exchange(user: str, password: str) -> tuple[ScramServer, ScramClient, bytes]:
    server = ScramServer(USERS.get, "server-nonce")
    client = ScramClient(user, password)
    final = server.step(client.final(server.step(client.first())))
    return server, client, final


def test_a_scram_exchange_with_the_right_password_authenticates_both_ways():
    server, client, final = _exchange("alice", "alice-secret")
    assert server.complete and server.username == "alice" and client.verify(final)


def test_a_wrong_password_or_an_unknown_user_fails_scram():
    with pytest.raises(ScramError):
        _exchange("alice", "wrong")
    with pytest.raises(ScramError):
        _exchange("mallory", "alice-secret")


@given(st.binary(max_size=200))
def test_any_client_first_message_gives_a_reply_or_a_scram_error(data):
    with contextlib.suppress(ScramError):
        ScramServer(USERS.get, "n").step(data)


def test_plain_checks_the_password_against_the_scram_credential():
    assert plain.authenticate(b"\x00alice\x00alice-secret", USERS.get) == "alice"
    assert verify_password(ALICE, "alice-secret") and not verify_password(ALICE, "x")
    for bad in (b"\x00alice\x00wrong", b"bob\x00alice\x00alice-secret", b"alice-secret"):
        with pytest.raises(plain.PlainError):
            plain.authenticate(bad, USERS.get)


# ------------------------------------------------------------------------- SASL session


def test_a_session_authenticates_after_a_handshake_and_only_then():
    s = SaslSession(["SCRAM-SHA-256"], USERS.get, lambda: "srv")
    early = s.authenticate({"auth_bytes": b"x"})
    assert early.close_after and early.body["error_code"] == 34  # ILLEGAL_SASL_STATE
    s = SaslSession(["SCRAM-SHA-256"], USERS.get, lambda: "srv")
    assert s.handshake({"mechanism": "SCRAM-SHA-256"}).body["error_code"] == 0
    client = ScramClient("alice", "alice-secret")
    first = s.authenticate({"auth_bytes": client.first()})
    final = s.authenticate({"auth_bytes": client.final(first.body["auth_bytes"])})
    assert client.verify(final.body["auth_bytes"]) and s.principal == "User:alice"


def test_an_unoffered_mechanism_is_refused_with_the_offered_ones():
    reply = SaslSession(["PLAIN"], USERS.get, lambda: "n").handshake({"mechanism": "GSSAPI"})
    assert reply.body == {"error_code": 33, "mechanisms": ["PLAIN"]} and reply.close_after


def test_a_failed_authentication_answers_sasl_authentication_failed_and_closes():
    s = SaslSession(["PLAIN"], USERS.get, lambda: "n")
    s.handshake({"mechanism": "PLAIN"})
    work = s.authenticate({"auth_bytes": b"\x00alice\x00nope"})  # a PLAIN password to check
    reply = s.resume(work, work.run())
    assert reply.body["error_code"] == 58 and reply.close_after and not s.authenticated
