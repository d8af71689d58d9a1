"""Every API Cohort answers, one row each: the one table its dispatch, routing, refusals and
Kafka's wire all read.

A row says what an API is: its name and Kafka API key, the versions the Kafka wire gateway
serves, the pure request and reply types, the field naming its groups, the shard's handler,
and the wire translation (``decode``: a Kafka request body to the pure request; ``encode``:
the pure reply to a Kafka response body). From this one table:

* the shard dispatches (``api_of(request).handler``), the runtime routes (``group_ids_of``)
  and refuses (``routing_error``), and every refusal is shaped (``error_response``);
* ``protocol.wire.versions`` derives what ApiVersions advertises and which keys and versions
  the codec decodes (exactly the rows with ``versions``: nothing else reaches a handler);
* the gateway (``actors/gateway/dispatch.py``) derives its dispatch: one I/O coroutine per
  wire row, found by the row's name, checked when it is imported, and each group API's
  coroutine translates through its row's ``decode`` / ``encode``.

Invariants, asserted when this module is imported and tested in ``tests/protocol/test_api.py``:
one row per name, per request type and per API key; a row has an API key exactly when the
gateway serves it (Cohort's own requests, which Kafka never shipped, have neither); a row the
gateway serves with a pure request names both halves of its translation. Rows with no pure
request (Metadata, ApiVersions, SASL, the topic admin APIs, the synthetic stream) are served by
the gateway alone. A new API is one row here (and, if Kafka clients speak it, one coroutine in
the gateway), not a change in four places.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from protocol import messages as m
from protocol import validation
from protocol.consumer.client_assignment import install_assignment, prepare_assignment
from protocol.consumer.describe import describe_groups
from protocol.errors import Errors
from protocol.listing import list_groups
from protocol.share import admin as share_admin
from protocol.streams import messages as streams
from protocol.streams import schemas as streams_schemas
from protocol.streams import wire as streams_wire
from protocol.wire import classic, consumer, offsets
from protocol.wire import share as share_wire
from protocol.wire import share_admin as share_admin_wire

# (shard, request) -> reply, or None while the reply is delayed (JoinGroup, SyncGroup).
Handler = Callable[[Any, Any], Any]


class Versions(NamedTuple):
    """The versions of an API the gateway serves, both ends included (within what kio, the
    codec, knows, or the row's ``own_schemas``; ranges start where Kafka 4.x's brokers do, except where an older client this
    project tests, aiokafka or kafka-python, still speaks an older one)."""

    min: int
    max: int


@dataclass(frozen=True)
class PerGroupReply:
    """A request naming many groups answers per group: its reply's list field and entry type.
    An error reply always has an entry, even for unreadable ids."""

    list_field: str
    entry: type


@dataclass(frozen=True)
class Api:
    """One API (see the module docstring for what the table guarantees)."""

    # Kafka's name for the API (Cohort's own: the request type's name without "Request").
    name: str
    # Kafka's ApiKeys id; None for Cohort's requests that Kafka never shipped (seed 000's
    # PrepareAssignment / InstallAssignment, seed 004's Connect requests).
    api_key: int | None
    # What the gateway serves; None exactly when ``api_key`` is None.
    versions: Versions | None
    # The pure request and reply; None for an API the gateway answers alone (Metadata, ...).
    request: type | None = None
    response: type | None = None
    # The request field naming its groups; None when it names none (ListGroups).
    group_ids_field: str | None = None
    # The shard's handler. None: answered by the shard's batch path (a row's heartbeat:
    # ConsumerGroupHeartbeat, ShareGroupHeartbeat), or not by the shard at all (a gateway row).
    handler: Handler | None = None
    per_group: PerGroupReply | None = None
    # The wire translation (``protocol/wire``): ``decode(body, ...)`` -> the pure request;
    # ``encode(reply, ...)`` -> the response body. The extra arguments are what the wire needs
    # beyond them (the version, the client, the request's body). OffsetFetch, whose wire
    # request names many groups and Cohort's one, decodes to a list and encodes the groups'
    # entries (``protocol.wire.offsets.fetch_group_entry``).
    decode: Callable[..., Any] | None = None
    encode: Callable[..., dict] | None = None
    # The wire entities of served versions kio lacks: version -> (request, response) entity
    # types in kio's form (``protocol.wire.codec.request_schema`` asks here before kio).
    own_schemas: Mapping[int, tuple[type, type]] | None = None


def _named(request: type) -> str:
    return request.__name__.removesuffix("Request")


def _cohort(request: type, response: type, groups: str, handler: Handler,
            per_group: PerGroupReply | None = None) -> Api:
    """A row Kafka's wire never carries: Cohort's own request (seeds 000 and 004)."""
    return Api(_named(request), None, None, request, response, groups, handler, per_group)


def _kafka(key: int, versions: Versions, request: type, response: type, groups: str | None,
           handler: Handler | None, decode: Callable[..., Any], encode: Callable[..., dict],
           per_group: PerGroupReply | None = None,
           own_schemas: Mapping[int, tuple[type, type]] | None = None) -> Api:
    """A group API Kafka's clients speak: answered by the shard, translated by the wire."""
    return Api(_named(request), key, versions, request, response, groups, handler, per_group,
               decode, encode, own_schemas)


def _gateway(key: int, versions: Versions, name: str,
             own_schemas: Mapping[int, tuple[type, type]] | None = None) -> Api:
    """An API the gateway answers alone (no pure request, no shard handler)."""
    return Api(name, key, versions, own_schemas=own_schemas)


_V = Versions
_DESCRIBED = PerGroupReply("groups", m.DescribedGroup)
_CONNECT_DESCRIBED = PerGroupReply("groups", m.ConnectDescribedGroup)
_CLASSIC_DESCRIBED = PerGroupReply("groups", m.DescribeGroupsResponseGroup)
_DELETED = PerGroupReply("results", m.DeletableGroupResult)
_SHARE_DESCRIBED = PerGroupReply("groups", m.ShareDescribedGroup)
_STREAMS_DESCRIBED = PerGroupReply("groups", streams.StreamsDescribedGroup)

# fmt: off
ROWS: tuple[Api, ...] = (
    #      key  versions   request                                  response                                  groups field    shard handler
    #      and below: the wire translation, decode (Kafka body -> request) and encode (reply -> Kafka body)
    _kafka(68,  _V(0, 1),  m.ConsumerGroupHeartbeatRequest,         m.ConsumerGroupHeartbeatResponse,         "group_id",     None,
           consumer.heartbeat_request, consumer.heartbeat_response),
    _kafka(69,  _V(0, 1),  m.ConsumerGroupDescribeRequest,          m.ConsumerGroupDescribeResponse,          "group_ids",    describe_groups,
           consumer.describe_request, consumer.describe_response, _DESCRIBED),
    _cohort(m.ConsumerGroupPrepareAssignmentRequest,               m.ConsumerGroupPrepareAssignmentResponse, "group_id",     prepare_assignment),
    _cohort(m.ConsumerGroupInstallAssignmentRequest,               m.ConsumerGroupInstallAssignmentResponse, "group_id",     install_assignment),
    _cohort(m.ConnectGroupHeartbeatRequest,                        m.ConnectGroupHeartbeatResponse,          "group_id",     lambda s, r: s.connect.heartbeat(r)),
    _cohort(m.ConnectGroupPrepareAssignmentRequest,                m.ConnectGroupPrepareAssignmentResponse,  "group_id",     lambda s, r: s.connect.prepare_assignment(r)),
    _cohort(m.ConnectGroupInstallAssignmentRequest,                m.ConnectGroupInstallAssignmentResponse,  "group_id",     lambda s, r: s.connect.install_assignment(r)),
    _cohort(m.ConnectGroupDescribeRequest,                         m.ConnectGroupDescribeResponse,           "group_ids",    lambda s, r: s.connect.describe(r),
            _CONNECT_DESCRIBED),
    _kafka(16,  _V(0, 5),  m.ListGroupsRequest,                     m.ListGroupsResponse,                     None,           list_groups,
           offsets.list_groups_request, offsets.list_groups_response),
    _kafka(11,  _V(0, 9),  m.JoinGroupRequest,                      m.JoinGroupResponse,                      "group_id",     lambda s, r: s.classic.join(r),
           classic.join_request, classic.join_response),
    _kafka(14,  _V(0, 5),  m.SyncGroupRequest,                      m.SyncGroupResponse,                      "group_id",     lambda s, r: s.classic.sync(r),
           classic.sync_request, classic.sync_response),
    _kafka(12,  _V(0, 4),  m.HeartbeatRequest,                      m.HeartbeatResponse,                      "group_id",     lambda s, r: s.classic.heartbeat(r),
           classic.heartbeat_request, classic.heartbeat_response),
    _kafka(13,  _V(0, 5),  m.LeaveGroupRequest,                     m.LeaveGroupResponse,                     "group_id",     lambda s, r: s.classic.leave(r),
           classic.leave_request, classic.leave_response),
    _kafka(15,  _V(0, 6),  m.DescribeGroupsRequest,                 m.DescribeGroupsResponse,                 "groups",       lambda s, r: s.classic.describe(r),
           classic.describe_groups_request, classic.describe_groups_response, _CLASSIC_DESCRIBED),
    _kafka(8,   _V(2, 9),  m.OffsetCommitRequest,                   m.OffsetCommitResponse,                   "group_id",     lambda s, r: s.offsets.commit(r),
           offsets.commit_request, offsets.commit_response),
    _kafka(9,   _V(1, 9),  m.OffsetFetchRequest,                    m.OffsetFetchResponse,                    "group_id",     lambda s, r: s.offsets.fetch(r),
           offsets.fetch_requests, offsets.fetch_response),
    _kafka(47,  _V(0, 0),  m.OffsetDeleteRequest,                   m.OffsetDeleteResponse,                   "group_id",     lambda s, r: s.offsets.delete(r),
           offsets.delete_request, offsets.delete_response),
    _kafka(42,  _V(0, 2),  m.DeleteGroupsRequest,                   m.DeleteGroupsResponse,                   "groups_names", lambda s, r: s.offsets.delete_groups(r),
           offsets.delete_groups_request, offsets.delete_groups_response, _DELETED),
    # Share groups (KIP-932): Kafka's keys 76-79 on the wire (protocol/wire/share.py; the
    # gateway keeps the share sessions) and the share-offset admin APIs, 90-92
    # (protocol/wire/share_admin.py; DescribeShareGroupOffsets decodes to one request per group).
    _kafka(76,  _V(1, 1),  m.ShareGroupHeartbeatRequest,            m.ShareGroupHeartbeatResponse,            "group_id",     None,
           share_wire.heartbeat_request, share_wire.heartbeat_response),
    _kafka(77,  _V(1, 1),  m.ShareGroupDescribeRequest,             m.ShareGroupDescribeResponse,             "group_ids",    lambda s, r: s.share.describe(r),
           share_wire.describe_request, share_wire.describe_response, _SHARE_DESCRIBED),
    _kafka(78,  _V(1, 2),  m.ShareFetchRequest,                     m.ShareFetchResponse,                     "group_id",     lambda s, r: s.share.partitions.fetch(r),
           share_wire.fetch_request, share_wire.fetch_response),
    _kafka(79,  _V(1, 2),  m.ShareAcknowledgeRequest,               m.ShareAcknowledgeResponse,               "group_id",     lambda s, r: s.share.partitions.acknowledge(r),
           share_wire.acknowledge_request, share_wire.acknowledge_response),
    _kafka(90,  _V(0, 1),  m.DescribeShareGroupOffsetsRequest,      m.DescribeShareGroupOffsetsResponse,      "group_id",     share_admin.describe_offsets,
           share_admin_wire.describe_offsets_requests, share_admin_wire.describe_offsets_response),
    _kafka(91,  _V(0, 0),  m.AlterShareGroupOffsetsRequest,         m.AlterShareGroupOffsetsResponse,         "group_id",     share_admin.alter_offsets,
           share_admin_wire.alter_offsets_request, share_admin_wire.alter_offsets_response),
    _kafka(92,  _V(0, 0),  m.DeleteShareGroupOffsetsRequest,        m.DeleteShareGroupOffsetsResponse,        "group_id",     share_admin.delete_offsets,
           share_admin_wire.delete_offsets_request, share_admin_wire.delete_offsets_response),
    # Streams groups (KIP-1071): Kafka's keys 88-89 at v0-1 as 4.4 serves them
    # (protocol/streams/wire.py; v1's entities, which kio lacks: protocol/streams/schemas.py;
    # the gateway creates the internal topics a heartbeat's reply names).
    _kafka(88,  _V(0, 1),  streams.StreamsGroupHeartbeatRequest,    streams.StreamsGroupHeartbeatResponse,    "group_id",     None,
           streams_wire.heartbeat_request, streams_wire.heartbeat_response,
           own_schemas=streams_schemas.own_versions(88)),
    _kafka(89,  _V(0, 1),  streams.StreamsGroupDescribeRequest,     streams.StreamsGroupDescribeResponse,     "group_ids",    lambda s, r: s.streams.describe(r),
           streams_wire.describe_request, streams_wire.describe_response, _STREAMS_DESCRIBED,
           own_schemas=streams_schemas.own_versions(89)),
    # The gateway's own: the broker it plays. Produce is listed because clients refuse a broker
    # that lacks it; it is answered with an error (``protocol.wire.stream``).
    _gateway(0,  _V(3, 11), "Produce"),
    _gateway(1,  _V(4, 12), "Fetch"),
    _gateway(2,  _V(1, 9),  "ListOffsets"),
    _gateway(3,  _V(0, 12), "Metadata"),
    _gateway(10, _V(0, 6),  "FindCoordinator"),
    _gateway(17, _V(1, 1),  "SaslHandshake"),
    _gateway(18, _V(0, 4),  "ApiVersions"),
    _gateway(19, _V(2, 7),  "CreateTopics"),
    _gateway(20, _V(1, 6),  "DeleteTopics"),
    _gateway(32, _V(1, 4),  "DescribeConfigs"),
    _gateway(36, _V(0, 2),  "SaslAuthenticate"),
    _gateway(37, _V(0, 3),  "CreatePartitions"),
    _gateway(44, _V(0, 1),  "IncrementalAlterConfigs"),
    _gateway(74, _V(0, 1),  "ListConfigResources"),
    # KIP-1331's topology description push, refused as Kafka 4.4 refuses it without its
    # description plugin (actors/gateway/streams_handlers.py).
    _gateway(93, _V(0, 0),  "StreamsGroupTopologyDescriptionUpdate",
             own_schemas=streams_schemas.own_versions(93)),
)
# fmt: on
APIS: dict[type, Api] = {a.request: a for a in ROWS if a.request is not None}
# The rows Kafka's wire carries, by key: what the gateway serves and ApiVersions advertises.
BY_API_KEY: dict[int, Api] = {a.api_key: a for a in ROWS if a.api_key is not None}
_PER_GROUP_FIELDS: dict[type, str] = {
    a.response: a.per_group.list_field for a in APIS.values() if a.per_group is not None
}


def _check(rows: tuple[Api, ...]) -> None:
    """The table's invariants (module docstring): a broken row fails at import, not later."""
    for column in ("name", "request", "api_key"):
        values = [getattr(a, column) for a in rows if getattr(a, column) is not None]
        assert len(set(values)) == len(values), f"two rows share an {column}"
    for a in rows:
        assert (a.api_key is None) == (a.versions is None), f"{a.name}: key without versions"
        assert a.versions is None or 0 <= a.versions.min <= a.versions.max, a.name
        if a.versions is not None and a.request is not None:
            assert a.decode is not None and a.encode is not None, f"{a.name}: no translation"


_check(ROWS)


def api_of(request: object) -> Api | None:
    return APIS.get(type(request))


def group_ids_of(request: object) -> list[str]:
    """The groups a request speaks for, as routing needs them (well-formed ids only: a
    malformed one is left for the shard to refuse). ``ListGroups`` names none."""
    api = api_of(request)
    field = api.group_ids_field if api is not None else "group_id"
    if field is None:
        return []
    ids = getattr(request, field, None)
    if api is None or api.per_group is None:
        ids = [ids]
    elif not isinstance(ids, list):
        ids = []
    return [g for g in ids if type(g) is str]


def routing_error(request: object) -> str | None:
    """Why the runtime must refuse ``request`` before routing it (INVALID_REQUEST), or None:
    a request of no known type, or group ids that are not strings Kafka could carry (a
    megabyte-long id is refused without being hashed)."""
    api = api_of(request)
    if api is None:
        return f"unknown request type {type(request).__name__}"
    why = validation.routing_error(request, api.group_ids_field, api.per_group is not None)
    return None if why is None else f"malformed field {api.request.__name__}.{why}"


def reply_error_codes(response: object) -> list[int]:
    """Every error code a reply carries: one per group for a per-group reply (DescribeGroups,
    ConsumerGroupDescribe, DeleteGroups), else its own; what a retrying caller inspects."""
    field = _PER_GROUP_FIELDS.get(type(response))
    if field is not None:
        return [getattr(e, "error_code", Errors.NONE) for e in getattr(response, field, [])]
    return [getattr(response, "error_code", Errors.NONE)]


def error_response(req: object, error: Errors, message: str | None) -> object:
    """The reply type ``req`` expects, carrying ``error`` and ``message``: one rule for every
    refusal, whether the shard, the runtime or an ended wait gives it."""
    api = api_of(req)
    if api is None:
        return m.ErrorResponse(error_code=error, error_message=message)
    if api.per_group is not None:
        ids = getattr(req, api.group_ids_field)
        named = [g for g in ids if type(g) is str] if type(ids) is list else []
        entries = [
            api.per_group.entry(error_code=error, error_message=message, group_id=g)
            for g in named or [""]
        ]
        return api.response(**{api.per_group.list_field: entries})
    resp = api.response()
    resp.error_code = error
    if hasattr(resp, "error_message"):
        resp.error_message = message
    if type(req) is m.JoinGroupRequest and type(req.member_id) is str:
        resp.member_id = req.member_id  # Kafka's JoinGroup refusals name the member
    return resp
