"""A gateway's listener, as the partitions open it too: the spec a partition needs to listen
for one gateway's clients, the node ids the partitions play, and where a partition binds.

Kafka's coordinator is a broker: a client finds the coordinator of its group
(FindCoordinator) and talks to that broker directly. Cohort's coordinators are the
``offsets-<p>`` partition actors, so each opens a listener for every gateway (one per
security setup: a plaintext ``gateway``, a SASL ``gateway-sasl`` ...), with that gateway's
TLS, SASL and ACL settings; the gateway names them in Metadata and FindCoordinator as brokers
``PARTITION_NODE_BASE + p`` (stable per partition, whatever node or port it is on now).
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass

from actors.gateway.serving import GatewayOptions
from protocol.wire.topics import Node

# Partition p is broker PARTITION_NODE_BASE + p in Metadata; the gateway is its own node_id
# (0 unless set), which must stay below this.
PARTITION_NODE_BASE = 1000
WILDCARD = "0.0.0.0"


@dataclass(frozen=True)
class ListenerSpec:
    """One gateway's listener: its name (``gateway`` or ``gateway-<x>``, the actor a
    partition forwards what it does not serve itself to), the host it binds, its options,
    and whether it fronts an upstream."""

    gateway: str
    host: str
    options: GatewayOptions
    # In front of an upstream (its settings): Metadata and transactional FindCoordinator are
    # the gateway's (it asks the upstream and names its own listeners), not answered from the
    # partition's image; the data and topic APIs (``relay_keys``) are relayed upstream by a
    # partition's listener too, and ApiVersions answers ``versions`` ((key, min, max) ...),
    # as the gateway's do: librdkafka checks features on whichever broker it reached first.
    upstream: object | None = None
    relay_keys: frozenset[int] = frozenset()
    versions: tuple[tuple[int, int, int], ...] = ()


class Coordinators:
    """Where each partition listens for one gateway's clients, as a snapshot: what a
    partition's listener answers Metadata and FindCoordinator with (the gateway sends it with
    every ``listen`` round, so it is at most a round old)."""

    def __init__(self, nodes: dict[int, Node] | None = None) -> None:
        self._nodes = dict(nodes or {})

    def node_of(self, p: int) -> Node | None:
        return self._nodes.get(p)

    def nodes(self) -> list[Node]:
        return [self._nodes[p] for p in sorted(self._nodes)]

    def with_node(self, p: int, node: Node) -> Coordinators:
        return Coordinators({**self._nodes, p: node})


def partition_node_id(p: int) -> int:
    return PARTITION_NODE_BASE + p


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def partition_address(gateway_host: str, node_ip: str) -> tuple[str, str]:
    """(host to bind, host to advertise) for a partition's listener, given the host its
    gateway binds and the address of the partition's own node.

    A gateway on loopback serves clients on its own machine only: its partitions (on that
    machine too, or unreachable anyway) bind and advertise the same loopback address. Any
    other gateway host means clients come over the network: a partition may run on any node,
    so it binds every interface of its node and advertises that node's address (the gateway's
    own address, or ``advertised_host``, names the gateway's node, not the partition's).
    """
    if is_loopback(gateway_host):
        return gateway_host, gateway_host
    return WILDCARD, node_ip


def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """A listener's TLS (1.2 and up) with the gateway's certificate and key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile, keyfile)
    return ctx
