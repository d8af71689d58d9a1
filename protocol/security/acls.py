"""ACLs as Kafka's ``StandardAuthorizer`` reads them: bindings, filters, and the decision.

A binding allows or denies one principal (``User:alice``, or ``User:*`` for everyone) one
operation on a resource: a group, a topic or the cluster, named literally, by prefix, or ``*``
for all. The decision follows Kafka: a super user may do anything; a matching DENY wins over
any ALLOW; otherwise a matching ALLOW permits, where ALLOW of READ, WRITE, DELETE or ALTER
also permits DESCRIBE and ALLOW of ALTER_CONFIGS also permits DESCRIBE_CONFIGS; with no
matching ALLOW the answer is no (``allow.everyone.if.no.acl.found=false``, Kafka's default).
Whether any of this applies at all is the gateway's setting: with no authorizer configured,
everything is allowed, as on a Kafka broker without ``authorizer.class.name``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields

from protocol.errors import CoordinatorError, Errors

OPERATIONS = ("ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
              "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE")
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
PERMISSIONS = ("ALLOW", "DENY")
WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"
ANONYMOUS = "User:ANONYMOUS"
# An ALLOW of the key also allows each operation in the value (Kafka's implied operations).
_IMPLIES = {
    "READ": {"DESCRIBE"}, "WRITE": {"DESCRIBE"}, "DELETE": {"DESCRIBE"}, "ALTER": {"DESCRIBE"},
    "ALTER_CONFIGS": {"DESCRIBE_CONFIGS"},
}
MAX_NAME_CHARS = 1000
# Distinct topic views whose bindings are kept indexed (``TopicView.may_describe``).
VIEWS_INDEXED = 256


@dataclass(frozen=True, order=True)
class AclBinding:
    principal: str
    resource_type: str
    resource_name: str
    operation: str
    permission: str = "ALLOW"
    pattern_type: str = "LITERAL"
    host: str = WILDCARD

    def as_list(self) -> list[str]:
        return [getattr(self, f.name) for f in fields(self)]

    @classmethod
    def from_list(cls, values: list[str]) -> AclBinding:
        return cls(*values)


@dataclass(frozen=True)
class AclFilter:
    """Matches bindings whose set fields are equal (None matches anything), as
    ``kafka-acls --list`` / ``--remove`` select them."""

    principal: str | None = None
    resource_type: str | None = None
    resource_name: str | None = None
    operation: str | None = None
    permission: str | None = None
    pattern_type: str | None = None
    host: str | None = None

    def matches(self, b: AclBinding) -> bool:
        return all(
            getattr(self, f.name) is None or getattr(self, f.name) == getattr(b, f.name)
            for f in fields(self)
        )


def check_binding(b: AclBinding) -> AclBinding:
    """``b`` with its enum fields upper-cased, or INVALID_REQUEST naming the bad field."""
    b = AclBinding(b.principal, str(b.resource_type).upper(), b.resource_name,
                   str(b.operation).upper(), str(b.permission).upper(),
                   str(b.pattern_type).upper(), b.host)
    for value, allowed, what in ((b.resource_type, RESOURCE_TYPES, "resource type"),
                                 (b.operation, OPERATIONS, "operation"),
                                 (b.permission, PERMISSIONS, "permission"),
                                 (b.pattern_type, PATTERN_TYPES, "pattern type")):
        if value not in allowed:
            raise CoordinatorError(Errors.INVALID_REQUEST,
                                   f"Unknown {what} {value!r}; expected one of {list(allowed)}.")
    for value, what in ((b.principal, "principal"), (b.resource_name, "resource name"),
                        (b.host, "host")):
        if (not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS
                or "\x00" in value):
            raise CoordinatorError(Errors.INVALID_REQUEST, f"The {what} must be a non-empty "
                                   f"string of at most {MAX_NAME_CHARS} characters, no NUL.")
    if ":" not in b.principal:
        raise CoordinatorError(Errors.INVALID_REQUEST,
                               f"Principal {b.principal!r} must be TYPE:NAME (User:alice).")
    if b.resource_type == "CLUSTER" and b.resource_name != CLUSTER_NAME:
        raise CoordinatorError(Errors.INVALID_REQUEST,
                               f"The cluster resource is named {CLUSTER_NAME!r}.")
    return b


class AclIndex:
    """The bindings found by resource, as Kafka's ``StandardAuthorizer`` finds them: a check
    reads only the bindings that can match its resource (the literal name, the wildcard
    ``*``, and the prefixes of the name that some PREFIXED binding names), not every binding
    the cluster holds. Built once per security image; lookups cost the bindings that match
    plus one dict lookup per distinct prefix length in use."""

    def __init__(self, acls: Iterable[AclBinding] = ()) -> None:
        self._literal: dict[tuple[str, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[str, str], list[AclBinding]] = {}
        lengths: dict[str, set[int]] = {}
        for b in acls:
            key = (b.resource_type, b.resource_name)
            if b.pattern_type == "PREFIXED":
                self._prefixed.setdefault(key, []).append(b)
                lengths.setdefault(b.resource_type, set()).add(len(b.resource_name))
            else:
                self._literal.setdefault(key, []).append(b)
        # Per resource type, the lengths of its prefixes, shortest first.
        self._prefix_lengths = {t: sorted(ns) for t, ns in lengths.items()}

    def matching(self, resource_type: str, name: str) -> Iterator[AclBinding]:
        """The bindings whose resource matches ``name`` (any principal, host, operation)."""
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for n in self._prefix_lengths.get(resource_type, ()):
            if n > len(name):
                break
            yield from self._prefixed.get((resource_type, name[:n]), ())

    def authorize(self, principal: str, host: str, operation: str, resource_type: str,
                  resource_name: str, super_users: Iterable[str] = ()) -> bool:
        """Kafka's decision for one action (see the module docstring)."""
        if principal in super_users:
            return True
        allowed = False
        for b in self.matching(resource_type, resource_name):
            if b.principal not in (principal, "User:*") or b.host not in (WILDCARD, host):
                continue
            if b.permission == "DENY" and b.operation in ("ALL", operation):
                return False
            if b.permission == "ALLOW" and (
                b.operation in ("ALL", operation) or operation in _IMPLIES.get(b.operation, ())
            ):
                allowed = True
        return allowed


def authorize(acls: AclIndex | Iterable[AclBinding], principal: str, host: str,
              operation: str, resource_type: str, resource_name: str,
              super_users: Iterable[str] = ()) -> bool:
    """Kafka's decision for one action (see the module docstring); a listener passes the
    ``AclIndex`` of its image, built once, rather than the bindings themselves."""
    index = acls if isinstance(acls, AclIndex) else AclIndex(acls)
    return index.authorize(principal, host, operation, resource_type, resource_name,
                           super_users)


@dataclass(frozen=True)
class TopicView:
    """What one principal, connected from one host, may DESCRIBE of the topics, as data: the
    topic bindings that can apply to it (its own or every user's, from its host or any), enough
    to decide for any topic, one created later too, with Kafka's rule. A member that subscribes
    by regex keeps its view (in its metadata record), so the topics its regex resolves to are
    those it may DESCRIBE, as Kafka 4.0's coordinator filters a regex's matches by the
    principal of the member that resolves it (KAFKA-18813). Pure and small: what the
    listener's authorizer knew of this principal when it last heard from the member."""

    principal: str
    host: str
    bindings: tuple[AclBinding, ...] = ()

    @classmethod
    def of(cls, acls: Iterable[AclBinding], principal: str, host: str) -> TopicView:
        return cls(principal, host, tuple(sorted(
            b for b in acls if b.resource_type == "TOPIC"
            and b.principal in (principal, "User:*") and b.host in (WILDCARD, host))))

    def may_describe(self, topic: str) -> bool:
        return _index_of(self.bindings).authorize(self.principal, self.host, "DESCRIBE",
                                                  "TOPIC", topic)


@functools.lru_cache(maxsize=VIEWS_INDEXED)
def _index_of(bindings: tuple[AclBinding, ...]) -> AclIndex:
    return AclIndex(bindings)
