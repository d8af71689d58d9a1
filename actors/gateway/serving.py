"""What every Kafka listener of Cohort holds, whoever runs it: the options it was started with,
the node it plays, the users and ACLs it enforces, what it served, and the epochs it told.

Two kinds of process listen for Kafka's protocol: the gateway (bootstrap, Metadata, the admin
APIs, the synthetic stream) and each ``offsets-<p>`` partition actor (the coordinator of its
groups: ``actors.gateway.broker``). A client reaches both with one principal and one set of
credentials, so both authenticate and authorize alike; this is that one half, and the group
handlers (``group_handlers``, ``share_handlers``) are written against it plus a ``router``
(how a request reaches its partition: a Ray call at the gateway, a direct call in the
partition).
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

from actors.gateway.admission import MAX_CONNECTIONS
from actors.runtime.controller_security import SecurityImage
from protocol.api import Api
from protocol.security.acls import AclIndex, TopicView, authorize
from protocol.security.scram import ScramCredential
from protocol.wire.codec import RequestHeader
from protocol.wire.framing import MAX_REQUEST_BYTES, MAX_UNAUTHENTICATED_BYTES
from protocol.wire.topics import Node

MAX_TRACKED_MEMBERS = 100_000
# Principals' views of the topics a listener keeps (``Serving.topic_view``).
MAX_TOPIC_VIEWS = 10_000
# Kafka's connections.max.idle.ms: a connection silent this long, owed nothing, is closed.
CONNECTIONS_MAX_IDLE_MS = 600_000
# A SASL connection must authenticate this soon after opening (Cohort's own: Kafka bounds it
# only by the idle deadline, which a client sending ApiVersions now and then never meets). A
# client's exchange is two or three round trips; 30 s is its request.timeout.ms.
AUTHENTICATION_TIMEOUT_MS = 30_000
# Kafka's connection.failed.authentication.delay.ms.
FAILED_AUTHENTICATION_DELAY_MS = 100


@dataclass(frozen=True)
class GatewayOptions:
    """How the gateway listens and what it demands (Kafka's listener and broker settings);
    the partitions' listeners for this gateway demand the same.

    ``sasl_mechanisms``: empty for no authentication (PLAINTEXT / SSL), else any of ``PLAIN``
    and ``SCRAM-SHA-256`` (SASL_PLAINTEXT / SASL_SSL). ``tls_certfile`` / ``tls_keyfile``: PEM
    files that turn TLS on (a partition on another node reads them at the same path).
    ``authorizer``: check ACLs (Kafka's ``authorizer.class.name``); off, everything is
    allowed. ``super_users``: principals the authorizer always allows. ``max_connections``:
    open client connections at most, per listener (Kafka's ``max.connections``); one more is
    closed at once (``actors.gateway.admission``). ``coordinator_port``: 0 for partitions
    listening on any free port (kept across their restarts while free), or N for partition
    p listening on N + p (what a firewall or a Kubernetes port list can name).
    ``connections_max_idle_ms``: a connection owed nothing and silent this long is closed
    (Kafka's ``connections.max.idle.ms``); ``authentication_timeout_ms``: a SASL connection
    not authenticated this long after opening is closed; ``sasl_server_max_receive_bytes``:
    the largest frame read before authentication (Kafka's ``sasl.server.max.receive.size``);
    ``connection_failed_authentication_delay_ms``: a failed authentication is answered and
    closed this late (Kafka's ``connection.failed.authentication.delay.ms``): all enforced by
    ``actors.gateway.connection``.
    """

    sasl_mechanisms: tuple[str, ...] = ()
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    authorizer: bool = False
    super_users: tuple[str, ...] = ()
    node_id: int = 0
    advertised_host: str | None = None
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_connections: int = MAX_CONNECTIONS
    connections_max_idle_ms: int = CONNECTIONS_MAX_IDLE_MS
    authentication_timeout_ms: int = AUTHENTICATION_TIMEOUT_MS
    sasl_server_max_receive_bytes: int = MAX_UNAUTHENTICATED_BYTES
    connection_failed_authentication_delay_ms: int = FAILED_AUTHENTICATION_DELAY_MS
    coordinator_port: int = 0
    # In front of an upstream: the port of the listener presenting its first broker (the
    # next ones follow), or 0 for free ports.
    broker_port_base: int = 0
    records_per_s: float = 50.0
    batch_interval_ms: int = 200
    # The stream began at the Unix epoch: its end is past any Ray consumer's position (they
    # process at the same rate, from later), and the same for every gateway and restart.
    stream_anchor_ms: int = 0


@dataclass
class WireRequest:
    """One decoded request, who sent it, and its row of the API table (``protocol.api``):
    what a handler translates it with."""

    header: RequestHeader
    body: dict
    principal: str
    client_host: str
    api: Api
    # The upstream broker whose listener the client reached, in front of an upstream (None:
    # the bootstrap listener, or no upstream): a client keeps one share session per broker.
    node_id: int | None = None
    # What the authorizer answered for this request, by (operation, resource type, name):
    # a topic named 10,000 times in one request is checked once (``Serving.may``).
    decisions: dict[tuple[str, str, str], bool] = field(default_factory=dict, repr=False,
                                                        compare=False)

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""


class Serving:
    """A listener's node, options, security image and bookkeeping (see the module docstring).

    The security image only moves forward (a push older than the one held is ignored), so a
    late push cannot bring back an ACL that was removed.
    """

    # The upstream this listener fronts (``actors.upstream.view.UpstreamView``), if any: the
    # gateway's; a partition's listener forwards what needs it to the gateway.
    upstream = None
    # The API keys the connection hands to ``actors.upstream`` before decoding (relayed, or
    # TxnOffsetCommit refused): none unless in front of an upstream.
    relay_keys: frozenset[int] = frozenset()

    def __init__(self, node: Node, options: GatewayOptions) -> None:
        self.node = node
        self.options = options
        self.security = SecurityImage(-1)
        self._acl_index = AclIndex()
        self._acl_index_of: tuple = ()  # the bindings ``_acl_index`` was built from
        # Each (principal, host)'s view of the topics, for the image's bindings ``_views_of``.
        self._views: dict[tuple[str, str], TopicView] = {}
        self._views_of: tuple = ()
        # Requests served, by (API key, version): what clients actually spoke (bounded by the
        # number of versions the API table serves).
        self.served: dict[tuple[int, int], int] = {}
        # The epoch (or classic generation) last sent to each member, newest last: what a
        # real client's callbacks ran under, for timelines. At most MAX_TRACKED_MEMBERS.
        self.epochs: collections.OrderedDict[tuple[str, str], int] = collections.OrderedDict()

    # ----------------------------------------------------------------- security

    def update_security(self, image: SecurityImage) -> None:
        if image.version >= self.security.version:
            self.security = image

    def user(self, name: str) -> ScramCredential | None:
        return self.security.users.get(name)

    def may(self, req: WireRequest, operation: str, resource_type: str, name: str) -> bool:
        """Whether ``req``'s principal may: decided once per request and resource (the
        answer is kept in ``req.decisions``), from the image's bindings indexed once."""
        if not self.options.authorizer:
            return True
        key = (operation, resource_type, name)
        decided = req.decisions.get(key)
        if decided is None:
            decided = req.decisions[key] = authorize(
                self._acls(), req.principal, req.client_host, operation, resource_type, name,
                self.options.super_users)
        return decided

    def topic_view(self, req: WireRequest) -> TopicView | None:
        """What ``req``'s principal, from its host, may DESCRIBE of the topics: what a regex it
        subscribes to resolves within (``TopicView``). None: every topic (no authorizer, or a
        super user). Made once per principal and host while the image's bindings stay (at
        most ``MAX_TOPIC_VIEWS`` kept), so a heartbeat costs a dictionary lookup."""
        if not self.options.authorizer or req.principal in self.options.super_users:
            return None
        acls = self.security.acls
        if acls is not self._views_of:
            self._views, self._views_of = {}, acls
        key = (req.principal, req.client_host)
        view = self._views.get(key)
        if view is None:
            if len(self._views) >= MAX_TOPIC_VIEWS:
                self._views.clear()
            view = self._views[key] = TopicView.of(acls, *key)
        return view

    def _acls(self) -> AclIndex:
        """The image's bindings, indexed (again only when the image holds other bindings)."""
        acls = self.security.acls
        if acls is not self._acl_index_of:
            self._acl_index, self._acl_index_of = AclIndex(acls), acls
        return self._acl_index

    def relayed_api_versions(self, version: int) -> object | None:
        """ApiVersions' reply when this listener relays to an upstream (its APIs and the
        upstream's, ``GatewayCore``); None: the API table's own."""
        return None

    # -------------------------------------------------------------- bookkeeping

    def saw_epoch(self, group_id: str, member_id: str | None, epoch: int) -> None:
        if not member_id or epoch < 0:
            return
        self.epochs[(group_id, member_id)] = epoch
        self.epochs.move_to_end((group_id, member_id))
        while len(self.epochs) > MAX_TRACKED_MEMBERS:
            self.epochs.popitem(last=False)

    def count(self, api_key: int, version: int) -> None:
        self.served[(api_key, version)] = self.served.get((api_key, version), 0) + 1

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)
