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
