"""A listener decides each resource once per request (``Serving.may``), however many of the
request's entries name it: a commit naming one topic 10,000 times is one ACL check."""

from __future__ import annotations

from actors.gateway.serving import GatewayOptions, Serving, WireRequest
from actors.runtime.controller_security import SecurityImage
from protocol.api import BY_API_KEY
from protocol.security import acls
from protocol.security.acls import AclBinding
from protocol.wire.codec import RequestHeader
from protocol.wire.topics import Node

ALICE = "User:alice"
OFFSET_COMMIT = 8
CONSUMER_GROUP_HEARTBEAT = 68


def test_a_topic_named_many_times_in_one_request_is_checked_once(monkeypatch):
    checked: list[tuple] = []
    decide = acls.authorize

    def counting(*args, **kwargs) -> bool:
        checked.append(args[3:6])
        return decide(*args, **kwargs)

    monkeypatch.setattr("actors.gateway.serving.authorize", counting)
    serving = Serving(Node(0, "h", 9092), GatewayOptions(authorizer=True))
    serving.update_security(SecurityImage(1, (AclBinding(ALICE, "TOPIC", "t", "READ"),)))
    req = WireRequest(RequestHeader(OFFSET_COMMIT, 8, 1, "c"), {}, ALICE, "10.0.0.1",
                      BY_API_KEY[OFFSET_COMMIT])
    assert all(serving.may(req, "READ", "TOPIC", "t") for _ in range(10_000))
    assert not serving.may(req, "READ", "TOPIC", "u")
    assert checked == [("READ", "TOPIC", "t"), ("READ", "TOPIC", "u")]


def _heartbeat(principal: str) -> WireRequest:
    return WireRequest(RequestHeader(CONSUMER_GROUP_HEARTBEAT, 1, 1, "c"), {}, principal,
                       "10.0.0.1", BY_API_KEY[CONSUMER_GROUP_HEARTBEAT])


def test_a_principals_view_of_the_topics_is_made_once_and_anew_when_the_acls_change():
    """What a regex subscriber may describe travels with its heartbeats (KAFKA-18813): made
    once per principal and host from the listener's bindings, not once per heartbeat."""
    serving = Serving(Node(0, "h", 9092), GatewayOptions(authorizer=True,
                                                         super_users=("User:admin",)))
    allow = AclBinding(ALICE, "TOPIC", "orders-", "DESCRIBE", pattern_type="PREFIXED")
    serving.update_security(SecurityImage(1, (allow, AclBinding(ALICE, "GROUP", "g", "READ"))))
    view = serving.topic_view(_heartbeat(ALICE))
    assert view.bindings == (allow,) and serving.topic_view(_heartbeat(ALICE)) is view
    assert view.may_describe("orders-eu") and not view.may_describe("payroll")
    deny = AclBinding(ALICE, "TOPIC", "orders-eu", "DESCRIBE", "DENY")
    serving.update_security(SecurityImage(2, (allow, deny)))
    assert not serving.topic_view(_heartbeat(ALICE)).may_describe("orders-eu")
    assert serving.topic_view(_heartbeat("User:admin")) is None  # a super user sees all
    open_listener = Serving(Node(0, "h", 9092), GatewayOptions())
    assert open_listener.topic_view(_heartbeat(ALICE)) is None  # no authorizer: all
