"""The ACL decision over an index: a check reads the bindings of its resource (literal,
wildcard, prefixes of its name), not every binding, and decides exactly as a scan of every
binding would (Kafka's StandardAuthorizer)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol.security import acls
from protocol.security.acls import AclBinding

ALICE = "User:alice"
OTHER_TOPICS = 100_000


def _scan(bindings, principal, host, operation, resource_type, name) -> bool:
    """The decision by reading every binding: the model the index must agree with."""
    allowed = False
    for b in bindings:
        if b.resource_type != resource_type or b.principal not in (principal, "User:*"):
            continue
        if b.host not in ("*", host):
            continue
        if not (name.startswith(b.resource_name) if b.pattern_type == "PREFIXED"
                else b.resource_name in ("*", name)):
            continue
        if b.permission == "DENY" and b.operation in ("ALL", operation):
            return False
        if b.permission == "ALLOW" and (b.operation in ("ALL", operation) or operation in {
                "READ": {"DESCRIBE"}, "WRITE": {"DESCRIBE"}, "DELETE": {"DESCRIBE"},
                "ALTER": {"DESCRIBE"}, "ALTER_CONFIGS": {"DESCRIBE_CONFIGS"}}.get(
                    b.operation, ())):
            allowed = True
    return allowed


def test_an_acl_check_reads_only_the_bindings_of_its_resource():
    mine = [AclBinding(ALICE, "TOPIC", "orders", "READ"),
            AclBinding("User:*", "TOPIC", "*", "DESCRIBE"),
            AclBinding(ALICE, "TOPIC", "ord", "WRITE", pattern_type="PREFIXED"),
            AclBinding(ALICE, "TOPIC", "orders", "DELETE", "DENY")]
    others = [AclBinding(ALICE, "TOPIC", f"other-{k}", "READ") for k in range(OTHER_TOPICS)]
    others += [AclBinding(ALICE, "GROUP", "orders", "READ"),
               AclBinding(ALICE, "TOPIC", "orders-x", "READ", pattern_type="PREFIXED")]
    index = acls.AclIndex(others + mine)
    assert sorted(index.matching("TOPIC", "orders")) == sorted(mine)
    assert index.authorize(ALICE, "h", "READ", "TOPIC", "orders")
    assert not index.authorize(ALICE, "h", "DELETE", "TOPIC", "orders")


NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ba"])
BINDINGS = st.builds(
    AclBinding, st.sampled_from([ALICE, "User:*", "User:bob"]),
    st.sampled_from(["TOPIC", "GROUP"]), NAMES,
    st.sampled_from(["ALL", "READ", "WRITE", "DESCRIBE", "DELETE"]),
    st.sampled_from(["ALLOW", "DENY"]), st.sampled_from(["LITERAL", "PREFIXED"]),
    st.sampled_from(["*", "10.0.0.1"]))


@given(st.lists(BINDINGS, max_size=12), NAMES, st.sampled_from(["TOPIC", "GROUP"]),
       st.sampled_from(["READ", "WRITE", "DESCRIBE", "DELETE"]),
       st.sampled_from(["10.0.0.1", "10.0.0.2"]))
def test_the_indexed_decision_is_the_decision_of_a_scan_of_every_binding(
        bindings, name, resource_type, operation, host):
    assert acls.authorize(acls.AclIndex(bindings), ALICE, host, operation, resource_type,
                          name) == _scan(bindings, ALICE, host, operation, resource_type, name)
