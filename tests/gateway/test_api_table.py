"""The one API table (``protocol.api``) and everything on the wire derived from it agree: what
ApiVersions advertises, what the codec admits, what the gateway dispatches, and each group
API's translation. No Ray: the table, the codec and the dispatch map are pure or plain data."""

from __future__ import annotations

import inspect
import struct

import pytest
from kio.serial import entity_reader

from actors.gateway import dispatch
from actors.gateway.routing import _retriable
from protocol import messages as m
from protocol.api import BY_API_KEY, ROWS, error_response
from protocol.errors import Errors
from protocol.wire.codec import (
    RequestHeader,
    UnknownApi,
    UnsupportedVersion,
    decode_request,
    encode_response,
)
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.offsets import fetch_refused
from protocol.wire.topics import TopicIndex
from protocol.wire.versions import api_versions_body, supports

WIRE_GROUP_ROWS = [a for a in ROWS if a.api_key is not None and a.request is not None]
CASES = [(a.name, v) for a in WIRE_GROUP_ROWS for v in range(a.versions.min, a.versions.max + 1)]
BY_NAME = {a.name: a for a in ROWS}


def _header_only(api_key: int, version: int) -> bytes:
    return struct.pack(">hhih", api_key, version, 1, -1)


def test_api_versions_advertises_exactly_the_rows_kafkas_wire_carries():
    advertised = {e["api_key"]: (e["min_version"], e["max_version"])
                  for e in api_versions_body()["api_keys"]}
    assert advertised == {a.api_key: tuple(a.versions) for a in ROWS if a.api_key is not None}


@pytest.mark.parametrize("api_key", range(100))
def test_the_codec_admits_exactly_the_rows_and_their_versions(api_key):
    api = BY_API_KEY.get(api_key)
    if api is None:
        with pytest.raises(UnknownApi):
            decode_request(_header_only(api_key, 0))
        return
    assert supports(api_key, api.versions.min) and supports(api_key, api.versions.max)
    for outside in (api.versions.min - 1, api.versions.max + 1):
        assert not supports(api_key, outside)
        with pytest.raises(UnsupportedVersion):
            decode_request(_header_only(api_key, outside))


def test_the_gateway_dispatches_every_row_and_nothing_else():
    assert set(dispatch.HANDLERS) | dispatch.CONNECTION_APIS == set(BY_API_KEY)
    assert not set(dispatch.HANDLERS) & dispatch.CONNECTION_APIS
    assert all(inspect.iscoroutinefunction(h) for h in dispatch.HANDLERS.values())
    for key, handler in dispatch.HANDLERS.items():
        assert dispatch.BY_NAME[BY_API_KEY[key].name] is handler


@pytest.mark.parametrize("change", ["a row without a handler", "a handler without a row"])
def test_a_dispatch_that_disagrees_with_the_table_refuses_to_load(monkeypatch, change):
    by_name = dict(dispatch.BY_NAME)
    if change == "a row without a handler":
        del by_name["Metadata"]
    else:
        by_name["AlterReplicaLogDirs"] = dispatch.api_versions
    monkeypatch.setattr(dispatch, "BY_NAME", by_name)
    with pytest.raises(ImportError, match="Metadata" if "without a handler" in change
                       else "AlterReplicaLogDirs"):
        dispatch._handlers()


def _decode(api, body: dict, version: int):
    extra = {"JoinGroup": ("client", "host"), "OffsetFetch": (version,),
             "ConsumerGroupHeartbeat": (TopicIndex(), "client", "host"),
             "ShareFetch": (TopicIndex(),), "ShareAcknowledge": (TopicIndex(),)}.get(api.name, ())
    return api.decode(body, *extra)


def _encode(api, request, body: dict, version: int) -> dict:
    if api.name == "OffsetFetch":  # answered per group, assembled from the groups' entries
        return api.encode([fetch_refused(r, Errors.NOT_COORDINATOR) for r in request], version)
    if api.name == "DescribeShareGroupOffsets":  # the same, one reply per group
        return api.encode([error_response(r, Errors.NOT_COORDINATOR, "moved") for r in request])
    reply = error_response(request, Errors.NOT_COORDINATOR, "moved")
    extra = {"LeaveGroup": (version,), "OffsetCommit": (body,),
             "ShareFetch": (lambda t, first, last: b"", 0),
             "ShareAcknowledge": (0,)}.get(api.name, ())
    return api.encode(reply, *extra)


@pytest.mark.parametrize(("name", "version"), CASES)
def test_a_group_rows_translation_decodes_to_its_request_and_encodes_its_reply(name, version):
    """What the codec decodes becomes the row's pure request; the row's refusal of it
    becomes a response the codec writes at that version, carrying the error."""
    api = BY_NAME[name]
    body = plain(build(load_request_schema(api.api_key, version), {}))
    request = _decode(api, body, version)
    requests = request if isinstance(request, list) else [request]
    assert all(type(r) is api.request for r in requests)
    reply = _encode(api, request, body, version)
    framed = encode_response(RequestHeader(api.api_key, version, 5, None), reply)
    schema = load_response_schema(api.api_key, version)
    offset = 4 + 4 + (1 if schema.__header_schema__.__flexible__ else 0)
    decoded, _ = entity_reader(schema)(framed, offset)
    if ("error_code" in reply and api.per_group is None
            and name not in ("OffsetFetch", "DescribeShareGroupOffsets")):
        assert plain(decoded)["error_code"] == Errors.NOT_COORDINATOR


def test_the_router_finds_a_retriable_error_where_the_table_says_a_reply_keeps_it():
    loading = Errors.COORDINATOR_LOAD_IN_PROGRESS
    per_group = error_response(m.DescribeGroupsRequest(groups=["a", "b"]), loading, "")
    assert _retriable(per_group)
    per_group.groups[0].error_code = Errors.NONE  # one group still loading is enough
    assert _retriable(per_group)
    assert not _retriable(m.DeleteGroupsResponse(results=[m.DeletableGroupResult("a")]))
    assert _retriable(m.ListGroupsResponse(error_code=loading))
    assert not _retriable(m.HeartbeatResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
