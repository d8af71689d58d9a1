"""A partition actor as a Kafka broker: the coordinator of its groups, listening itself.

Kafka's clients talk to their group's coordinator directly (FindCoordinator names it), so in
Cohort each ``offsets-<p>`` actor listens for Kafka's protocol and serves its groups' requests
in its own process: socket, decode, the partition's turn (durable), encode, socket, with no
Ray call and no other process in between. One listener per gateway (``ListenerSpec``: the
gateway's TLS, SASL and ACL settings; its users and ACLs come with the security image the
controller and the gateway push).

What a partition serves itself (``LOCAL``): the group coordinator's APIs, answered for the
groups that hash to it (any other group is NOT_COORDINATOR, as on a Kafka broker that does not
coordinate it), ApiVersions and SASL, and Metadata and FindCoordinator (clients send them to
their coordinator too, on every join), answered as the gateway answers them: from the topics of
the image the partition applies and the directory of coordinators the gateway sends with every
``listen``. ListGroups answers none: Kafka's admin clients ask every broker in Metadata and
merge, and the gateway already lists every group. Everything else (the topic and config admin
APIs, Fetch and the share-partition APIs) is forwarded to the gateway, whose answer is the
cluster's: one topic index, one synthetic stream. The hot requests
(commits, offset fetches, heartbeats) are pipelined (``connection``) and are applied as
requests the wire codec built (``typed``: checked once, at the codec).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable
from typing import NamedTuple

import ray

from actors.gateway import topic_handlers
from actors.gateway.admission import Admission
from actors.gateway.connection import Connection, Pending
from actors.gateway.dispatch import BY_NAME
from actors.gateway.kept_metadata import (
    KeptAnswers,
    KeptReplies,
    addressed,
    metadata_question,
)
from actors.gateway.listener import (
    Coordinators,
    ListenerSpec,
    partition_address,
    partition_node_id,
    tls_context,
)
from actors.gateway.serving import Serving, WireRequest
from actors.runtime.controller import NAMESPACE
from actors.runtime.controller_security import SecurityImage
from actors.runtime.offload import BIG, off_loop, pure
from actors.runtime.packed import pack
from actors.runtime.turns import PartitionTurns
from actors.upstream.relay import ClientRelay
from actors.upstream.view import UpstreamView
from protocol.api import BY_API_KEY, error_response
from protocol.errors import Errors
from protocol.placement import partition_for
from protocol.wire.codec import EncodedBody, encode_body, encode_commit_reply, encode_response
from protocol.wire.topics import Node, TopicIndex
from protocol.wire.upstream import DESCRIBE_CLUSTER, FIND_COORDINATOR, versions_reply

log = logging.getLogger(__name__)

# The APIs a partition answers itself, by Kafka's name, with the gateway's own coroutines
# (``dispatch.BY_NAME``); the rest goes to the gateway.
LOCAL_APIS = ("ApiVersions", "Metadata", "FindCoordinator", "OffsetCommit", "OffsetFetch",
              "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups",
              "ListGroups", "DeleteGroups", "OffsetDelete", "ConsumerGroupHeartbeat",
              "ConsumerGroupDescribe", "ShareGroupHeartbeat", "ShareGroupDescribe",
              "AlterShareGroupOffsets", "DeleteShareGroupOffsets")
LOCAL = {name: BY_NAME[name] for name in LOCAL_APIS}
LOCAL["Metadata"] = lambda core, req: core.metadata(req)  # replies kept (BrokerCore.metadata)
# Metadata replies a partition keeps, written (see ``BrokerCore.metadata``), by their bytes:
# a reply for every topic of 35,718 partitions (issue 30's fuzzer left them) is ~1 MiB, and 64
# of them, as many as were kept by count, would be a partition's idle size again.
METADATA_KEPT_BYTES = 8 << 20
# Answered within the turn that applies them: submitted as soon as read (``connection``).
PIPELINED = frozenset(key for key, api in BY_API_KEY.items() if api.name in {
    "OffsetCommit", "OffsetFetch", "Heartbeat", "ConsumerGroupHeartbeat"})


class LocalRoute:
    """``actors.gateway.routing.Router``'s calls, answered by this partition's own turns:
    what the group handlers send reaches the mailbox directly. A request for a group of
    another partition is refused by the turns (NOT_COORDINATOR), as by a Kafka broker that is
    not its coordinator."""

    def __init__(self, turns: PartitionTurns, partition: int, num_partitions: int) -> None:
        self._turns = turns
        self._partition = partition
        self._num_partitions = num_partitions

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self._num_partitions)

    async def call(self, request: object) -> object:
        return (await self._turns.handle_batch([request], typed=True))[0]

    def submit(self, requests: list[object], done: asyncio.Future) -> None:
        """``call`` for many, without a coroutine: ``done`` gets the list of their replies."""
        self._turns.submit(requests, done)

    async def call_by_partition(self, group_ids: list[str], make) -> dict[str, object]:
        """One request for the groups this partition coordinates, each named once (a group
        named 50,000 times is one describe), and NOT_COORDINATOR for the rest."""
        distinct = list(dict.fromkeys(group_ids))
        mine = [g for g in distinct if partition_for(g, self._num_partitions) == self._partition]
        mine_set = set(mine)
        others = [g for g in distinct if g not in mine_set]
        out: dict[str, object] = {}
        if mine:
            out.update(dict.fromkeys(mine, await self.call(make(mine))))
        if others:
            refusal = error_response(make(others), Errors.NOT_COORDINATOR,
                                     f"offsets-{self._partition} does not coordinate them")
            out.update(dict.fromkeys(others, refusal))
        return out

    async def call_all(self, request: object) -> list[object]:
        return []  # ListGroups: the gateway lists every group (module docstring)


class _GatewaySessions:
    """The share sessions live at the gateway (the share-partition leader); a member that
    leaves through its coordinator has its session dropped there too. The gateway is looked
    up once, on a thread: ``ray.get_actor`` is a blocking call to Ray's GCS, and any client may
    send leaves (the wire fuzzer's did, one lookup each on the partition's loop)."""

    def __init__(self, gateway: str) -> None:
        self._gateway = gateway
        self._handle = None

    def drop(self, group_id: str, member_id: str) -> None:
        if self._handle is not None:
            self._handle.drop_share_session.remote(group_id, member_id)
            return
        asyncio.get_running_loop().run_in_executor(None, self._look_up_and_drop, group_id,
                                                   member_id)

    def _look_up_and_drop(self, group_id: str, member_id: str) -> None:
        try:
            self._handle = ray.get_actor(self._gateway, namespace=NAMESPACE)
            self._handle.drop_share_session.remote(group_id, member_id)
        except Exception as e:  # the gateway is restarting: its session expires on its own
            log.info("share session of %s/%s not dropped: %s", group_id, member_id, e)


class BrokerCore(Serving):
    """What the group handlers read of a listener, in a partition (``GatewayCore``'s half
    that the coordinator needs): the route to this partition's turns and the topics of the
    image the partition applies."""

    def __init__(self, node: Node, spec: ListenerSpec, route: LocalRoute,
                 turns: PartitionTurns) -> None:
        super().__init__(node, spec.options)
        self.router = route
        # The gateway (which leads every topic partition) and where every partition listens,
        # as of the gateway's last ``listen`` round.
        self.leader = node
        self.brokers = Coordinators()
        self.share_sessions = _GatewaySessions(spec.gateway)
        self._turns = turns
        self._index = TopicIndex()
        self._index_of: object = None
        # Written replies, for _metadata_of.
        self._metadata = KeptReplies(METADATA_KEPT_BYTES)
        self._metadata_of: TopicIndex | None = None
        # In front of an upstream, this listener is a face of the cluster like the gateway's:
        # it relays what they relay (a transaction's FindCoordinator goes to the gateway,
        # which names its listeners) and refuses TxnOffsetCommit (protocol/wire/upstream.py);
        # DescribeCluster, whose brokers only the gateway can name, is not offered here.
        self.relay_view = UpstreamView(spec.upstream) if spec.upstream else None
        if spec.upstream:
            self.relay_keys = spec.relay_keys - {FIND_COORDINATOR, DESCRIBE_CLUSTER}
            self._versions = tuple(v for v in spec.versions if v[0] != DESCRIBE_CLUSTER)

    def relayed_api_versions(self, version: int) -> EncodedBody | None:
        return versions_reply(version, self._versions) if self.relay_view else None

    async def topics_knowing(self, names=(), uuids=()) -> TopicIndex:
        """The topics of the image this partition applies: the controller pushes every
        change before it returns, so no request waits on the controller."""
        shard = self._turns.shard
        image = shard.image if shard is not None else None
        if image is not None and image is not self._index_of:
            self._index, self._index_of = TopicIndex(image.topics()), image
        return self._index

    async def metadata(self, req: WireRequest) -> dict | EncodedBody:
        """``topic_handlers.metadata``, written once per question while its answer holds: a
        client asks Metadata on each new connection, ahead of its first heartbeat there, so a
        hundred consumers joining at once queued their joins behind a hundred Metadata replies
        written by kio (~0.3 ms each). Without an authorizer the answer depends only on the
        question, the image and where the brokers are; with one it depends on who asks, and
        is written each time."""
        if self.options.authorizer:
            return await topic_handlers.metadata(self, req)
        # A question naming a topic 100,000 times is read off the loop (``pure``), as its body
        # was decoded: issue 30's fuzzer held partitions' loops with it.
        key = await pure(metadata_question, req, self.leader, tuple(self.brokers.nodes()))
        if key is None:  # too heavy a question to keep: answered, not remembered
            return await topic_handlers.metadata(self, req)
        index = await self.topics_knowing()
        if index is not self._metadata_of:  # a new image: every reply kept is stale
            self._metadata, self._metadata_of = KeptReplies(METADATA_KEPT_BYTES), index
        reply = self._metadata.get(key)
        if reply is None:
            body = await topic_handlers.metadata(self, req)
            reply = await pure(encode_body, req.header.api_key, req.version, body)
            self._metadata.keep(key, reply)
        return reply


class Listener:
    """One gateway's listener in this partition: a server, its connections, their bound."""

    def __init__(self, spec: ListenerSpec, core: BrokerCore) -> None:
        self.spec = spec
        self.core = core
        self.admission = Admission(spec.options.max_connections)
        self._server: asyncio.base_events.Server | None = None
        self._forward_to = None
        self._batch: _Batch | None = None  # the commits read in this loop iteration
        self._forwarded_metadata: KeptAnswers[bytes | None] = KeptAnswers()

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    async def start(self, bind_host: str, port_hint: int) -> None:
        options = self.spec.options
        tls = tls_context(options.tls_certfile, options.tls_keyfile) \
            if options.tls_certfile else None
        for port in ([port_hint, 0] if port_hint else [0]):
            try:
                self._server = await asyncio.start_server(
                    self.admission.accepting(self._serve), bind_host, port, ssl=tls,
                    reuse_address=True)
                return
            except OSError as e:  # the old port is taken: any port will do
                log.info("cannot listen on %s:%d (%s)", bind_host, port, e)
        raise OSError(f"cannot listen on {bind_host}")

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.admission.drop_all()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relay = None
        if self.core.relay_view is not None:  # no broker of its own: the upstream's first
            relay = ClientRelay(self.core.relay_view, None, lambda _node: None)
        await Connection(self.core, reader, writer, self._respond, PIPELINED, relay).run()

    def _respond(self, req: WireRequest) -> Awaitable[bytes | None] | Pending:
        """How ``req`` is answered: an allowed OffsetCommit (the hot request) goes straight
        into the partition's mailbox (``Pending``: its reply is encoded when written); anything
        else is a coroutine the connection runs as a task."""
        if req.api.name == "OffsetCommit" and not BIG.get():  # a big one's reply: off the loop
            pending = self._commit_now(req)
            if pending is not None:
                return pending
        # The task's first step is scheduled now: commits read after this request must reach
        # the mailbox after it, so they start a batch of their own.
        self._batch = None
        return self._respond_in_task(req)

    def _commit_now(self, req: WireRequest) -> Pending | None:
        """``group_handlers.offset_commit``'s path when every topic is allowed, with no task,
        no coroutine and no callback of its own: None when some are not (the handler answers
        those). Commits read in one loop iteration, from any connection of this listener, go
        to the mailbox as one entry, in the next iteration, as a task's first step would: a
        request run as a task and read before them reaches the mailbox first (its first step
        was scheduled first), so mailbox order stays read order."""
        core, body = self.core, req.body
        if core.options.authorizer and (
                not core.may(req, "READ", "GROUP", body["group_id"]) or not all(
                    core.may(req, "READ", "TOPIC", t["name"]) for t in body.get("topics", ()))):
            return None
        batch = self._batch
        if batch is None:
            loop = asyncio.get_running_loop()
            batch = self._batch = _Batch([], loop.create_future())
            loop.call_soon(self._submit_batch, batch)
        batch.requests.append(req.api.decode(body, req.version))
        return Pending(batch.done, functools.partial(_encode_commit, req, len(batch.requests) - 1))

    def _submit_batch(self, batch: _Batch) -> None:
        if self._batch is batch:
            self._batch = None
        self.core.router.submit(batch.requests, batch.done)

    async def _respond_in_task(self, req: WireRequest) -> bytes | None:
        handler = LOCAL.get(req.api.name)
        if handler is not None and not (self.spec.upstream and _upstream_answers(req)):
            body = await handler(self.core, req)
            return None if body is None else await pure(encode_response, req.header, body)
        if req.api.name == "Metadata" and not self.core.options.authorizer:
            key = await pure(metadata_question, req, self.core.leader,
                             tuple(self.core.brokers.nodes()))
            if key is not None:  # one call to the gateway per question (kept_metadata)
                # The index is read again every second: its topics, not the object, are the image.
                index = await self.core.topics_knowing()
                framed = await self._forwarded_metadata.answer(
                    key, index.by_name, functools.partial(self._forward, req))
                return None if framed is None else addressed(framed, req.header.correlation_id)
        return await self._forward(req)

    async def _forward(self, req: WireRequest) -> bytes | None:
        """``req`` answered by the gateway (``Gateway.forwarded``)."""
        if self._forward_to is None:
            self._forward_to = ray.get_actor(self.spec.gateway, namespace=NAMESPACE)
        if BIG.get():  # Ray would pickle the body on this loop: packed off it instead
            packed = await off_loop(pack, (req.header, req.body, req.principal,
                                           req.client_host))
            ref = self._forward_to.forwarded_packed.remote(packed)
        else:
            ref = self._forward_to.forwarded.remote(req.header, req.body, req.principal,
                                                    req.client_host)
        try:
            return await ref
        except asyncio.CancelledError:
            # Nobody will read the answer (the client left): the gateway drops the request,
            # queued or waiting, and Ray the arguments it keeps until then.
            with contextlib.suppress(Exception):
                ray.cancel(ref)
            raise
        except Exception:
            self._forward_to = None  # restarted, maybe: found again next time
            raise


def _upstream_answers(req: WireRequest) -> bool:
    """In front of an upstream, what the gateway answers from it: Metadata (its topics and
    leaders) and FindCoordinator for transactions (the upstream's transaction coordinator)."""
    return req.api.name == "Metadata" or (
        req.api.name == "FindCoordinator" and req.body.get("key_type") == 1)


class _Batch(NamedTuple):
    """OffsetCommits on their way to the mailbox as one entry; ``done`` gets their replies."""

    requests: list[object]
    done: asyncio.Future


def _encode_commit(req: WireRequest, n: int, replies: list[object]) -> bytes:
    """The response frame of the OffsetCommit ``req``, whose reply is ``replies[n]``."""
    return encode_commit_reply(req.header, replies[n], req.body)


class PartitionBroker:
    """Every listener of one partition, by gateway name (see the module docstring)."""

    def __init__(self, partition: int, num_partitions: int, turns: PartitionTurns,
                 node_ip: str) -> None:
        self._partition = partition
        self._turns = turns
        self._route = LocalRoute(turns, partition, num_partitions)
        self._node_ip = node_ip
        self._listeners: dict[str, Listener] = {}
        self.security = SecurityImage(-1)

    async def listen(self, spec: ListenerSpec, port_hint: int = 0, leader: Node | None = None,
                     coordinators: dict[int, Node] | None = None) -> tuple[str, int, int]:
        """Listen for ``spec``'s gateway (if not already, with the same spec): the host and
        port clients reach this partition at, and the security image version it holds.
        ``leader`` and ``coordinators``: the gateway's node and directory, as of now."""
        if self._turns.state == "fenced":
            self.close_all()
            raise RuntimeError(f"offsets-{self._partition} is fenced: it serves nobody")
        listener = self._listeners.get(spec.gateway)
        if listener is None or listener.spec != spec:
            if listener is not None:
                listener.close()
            listener = await self._open(spec, port_hint)
        core = listener.core
        if leader is not None:
            core.leader = leader
        core.brokers = Coordinators(coordinators).with_node(self._partition, core.node)
        return core.node.host, core.node.port, self.security.version

    async def _open(self, spec: ListenerSpec, port_hint: int) -> Listener:
        bind_host, advertised = partition_address(spec.host, self._node_ip)
        node_id = partition_node_id(self._partition)
        core = BrokerCore(Node(node_id, advertised, 0), spec, self._route, self._turns)
        core.update_security(self.security)
        listener = Listener(spec, core)
        await listener.start(bind_host, port_hint)
        core.node = Node(node_id, advertised, listener.port)
        self._listeners[spec.gateway] = listener
        log.info("offsets-%d listens for %s on %s:%d", self._partition, spec.gateway,
                 advertised, listener.port)
        return listener

    def close(self, gateway: str) -> None:
        listener = self._listeners.pop(gateway, None)
        if listener is not None:
            listener.close()

    def close_all(self) -> None:
        for name in list(self._listeners):
            self.close(name)

    def update_security(self, image: SecurityImage) -> None:
        if image.version < self.security.version:
            return
        self.security = image
        for listener in self._listeners.values():
            listener.core.update_security(image)

    def member_epoch(self, gateway: str, group_id: str, member_id: str) -> int:
        listener = self._listeners.get(gateway)
        return -1 if listener is None else listener.core.epochs.get((group_id, member_id), -1)

    def stats(self) -> dict:
        return {name: {"port": lst.port, "connections": lst.admission.open,
                       "refused_connections": lst.admission.refused,
                       "served": dict(lst.core.served)}
                for name, lst in self._listeners.items()}
