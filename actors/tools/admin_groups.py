"""``cohort groups --list / --describe / --delete / --validate-regex``: the groups as they are.

Kafka has one describe API per group type (ConsumerGroupDescribe for KIP-848 groups,
DescribeGroups for classic ones) and a group known only by its committed offsets has no group
object at all; this module hides those differences behind one ``_Group`` view, so that the
offsets, members and state views (and ``admin_offsets``, which needs a group's state and
offsets before a reset) see every group the way Kafka's tool shows it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from actors.runtime.ray_driver import get_unwrapped as _get
from actors.tools.admin import AdminError, Columns, Row, missing_group, raise_for
from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)
from protocol.consumer.regex import InvalidRegex, compile_topic_regex, matching_topics
from protocol.errors import CoordinatorError, Errors
from protocol.wire.stream import SyntheticStream

# The columns of each view, with Kafka's headers.
LIST_COLUMNS: Columns = [("GROUP", "group"), ("TYPE", "type"), ("STATE", "state")]
OFFSETS_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("CURRENT-OFFSET", "current_offset"), ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"),
    ("CONSUMER-ID", "consumer_id"), ("HOST", "host"), ("CLIENT-ID", "client_id"),
]
MEMBERS_COLUMNS: Columns = [
    ("GROUP", "group"), ("CONSUMER-ID", "consumer_id"), ("GROUP-INSTANCE-ID", "group_instance_id"),
    ("HOST", "host"), ("CLIENT-ID", "client_id"), ("#PARTITIONS", "partitions"),
]
MEMBERS_VERBOSE_COLUMNS: Columns = [
    *MEMBERS_COLUMNS,
    ("CURRENT-EPOCH", "current_epoch"), ("CURRENT-ASSIGNMENT", "current_assignment"),
    ("TARGET-EPOCH", "target_epoch"), ("TARGET-ASSIGNMENT", "target_assignment"),
]
# Kafka's kafka-share-groups.sh --describe --offsets, and the stream's end beside the start.
SHARE_OFFSETS_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("START-OFFSET", "start_offset"), ("IN-FLIGHT", "in_flight"),
    ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"),
]
STATE_COLUMNS: Columns = [
    ("GROUP", "group"), ("COORDINATOR", "coordinator"),
    ("ASSIGNMENT-STRATEGY", "assignment_strategy"),
    ("STATE", "state"), ("#MEMBERS", "members"), ("GROUP-EPOCH", "group_epoch"),
    ("ASSIGNMENT-EPOCH", "assignment_epoch"),
]
REGEX_COLUMNS: Columns = [("TOPIC", "topic"), ("PARTITIONS", "partitions")]


# --------------------------------------------------------------------------- list


def list_groups(cluster, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[Row]:
    """Every group, filtered as ListGroups filters (states in either spelling; types
    ``consumer`` / ``classic``)."""
    try:
        listed = cluster.list_groups(states=states, types=types)
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None
    return [
        {"group": g.group_id, "type": g.group_type, "protocol_type": g.protocol_type,
         "state": g.group_state}
        for g in listed
    ]


def listed_group(cluster, group_id: str) -> m.ListedGroup:
    """The group's ListGroups entry (its type and state), or the missing-group error.

    A group known only by its committed offsets (Kafka's "simple" group: a consumer that
    commits without group management) has no group object, so ListGroups does not name it;
    it is shown as Kafka shows it, an empty classic group.
    """
    for g in cluster.list_groups():
        if g.group_id == group_id:
            return g
    if committed_offsets(cluster, group_id, missing_ok=True):
        return m.ListedGroup(group_id, "", "empty", "classic")
    raise missing_group(group_id)


# --------------------------------------------------------------------------- describe


@dataclasses.dataclass
class _Member:
    member_id: str
    instance_id: str | None
    host: str
    client_id: str
    epoch: int
    assignment: list[tuple[str, int]]
    target: list[tuple[str, int]] | None


@dataclasses.dataclass
class _Group:
    group_id: str
    group_type: str
    state: str
    coordinator: str  # the offsets partition actor that owns the group
    strategy: str
    group_epoch: int
    assignment_epoch: int | None
    members: list[_Member]


def _describe(cluster, group_id: str) -> _Group:
    """One group through the describe API of its type: ConsumerGroupDescribe for a KIP-848
    group, DescribeGroups for a classic one (ListGroups tells which)."""
    listed = listed_group(cluster, group_id)
    coordinator = f"offsets-{cluster.partition_for(group_id)}"
    if listed.group_type == "consumer":
        d = cluster.describe(group_id)
        if d.error_code == Errors.GROUP_ID_NOT_FOUND:
            raise missing_group(group_id)
        raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
        return _Group(
            group_id, "consumer", d.group_state, coordinator, d.assignor_name, d.group_epoch,
            d.assignment_epoch,
            [
                _Member(
                    mem.member_id, mem.instance_id, mem.client_host, mem.client_id,
                    mem.member_epoch, _pairs(mem.assignment.topic_partitions),
                    _pairs(mem.target_assignment.topic_partitions),
                )
                for mem in d.members
            ],
        )
    if listed.group_type == "connect":
        return _describe_connect(cluster, group_id, coordinator)
    if listed.group_type == "share":
        return _describe_share(cluster, group_id, coordinator)
    resp = cluster.call(m.DescribeGroupsRequest(groups=[group_id]))
    d = resp.groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND and listed.group_state == "empty":
        return _Group(group_id, "classic", "empty", coordinator, "", -1, None, [])  # offsets only
    if d.error_code == Errors.GROUP_ID_NOT_FOUND or d.group_state == "dead":
        raise missing_group(group_id)
    raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return _Group(
        group_id, "classic", d.group_state, coordinator, d.protocol_data, d.generation_id, None,
        [
            _Member(
                mem.member_id, mem.group_instance_id, mem.client_host, mem.client_id,
                d.generation_id, _classic_assignment(d.protocol_type, mem.member_assignment),
                None,
            )
            for mem in d.members
        ],
    )


def _describe_connect(cluster, group_id: str, coordinator: str) -> _Group:
    """A Connect worker group through ConnectGroupDescribe; a worker's units are its
    connectors (task -1, Connect's sentinel for the connector itself) and tasks
    (``admin_connectors`` shows them by name)."""
    d = cluster.describe_connect(group_id)
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return _Group(
        group_id, "connect", d.group_state, coordinator, d.assignor_name, d.group_epoch,
        d.assignment_epoch,
        [
            _Member(w.member_id, w.instance_id, w.client_host, w.client_id, w.member_epoch,
                    _units(w.assignment), _units(w.target_assignment))
            for w in d.members
        ],
    )


def _describe_share(cluster, group_id: str, coordinator: str) -> _Group:
    """A share group through ShareGroupDescribe (members may share partitions)."""
    d = cluster.call(m.ShareGroupDescribeRequest(group_ids=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return _Group(
        group_id, "share", d.group_state, coordinator, d.assignor_name, d.group_epoch,
        d.assignment_epoch,
        [_Member(x.member_id, None, x.client_host, x.client_id, x.member_epoch,
                 _pairs(x.assignment.topic_partitions), None) for x in d.members],
    )


def describe_share_offsets(cluster, group_id: str,
                           log_end_offset: int | None = None) -> tuple[list[Row], list[str]]:
    """A share group's share-partitions: start offset (every record below it acknowledged,
    rejected or archived) and lag (records from it to ``log_end_offset`` not yet done, by
    default the end of the gateway's default stream now), as DescribeShareGroupOffsets gives
    them."""
    if log_end_offset is None:
        log_end_offset = SyntheticStream(0).end_offset(int(time.time() * 1000))
    group = _describe_share(cluster, group_id, f"offsets-{cluster.partition_for(group_id)}")
    resp = cluster.call(m.DescribeShareGroupOffsetsRequest(group_id=group_id,
                                                           log_end_offset=log_end_offset))
    raise_for(resp.error_code, resp.error_message,
              f"Describing the share offsets of group '{group_id}' failed")
    in_flight = _get(cluster.coordinator(group_id).query.remote(
        partial(share_in_flight, group_id=group_id)))
    rows = [{"group": group_id, "topic": t.topic_name, "partition": p.partition,
             "start_offset": None if p.start_offset < 0 else p.start_offset,
             "in_flight": in_flight.get((t.topic_id, p.partition), 0),
             "log_end_offset": log_end_offset, "lag": None if p.lag < 0 else p.lag}
            for t in resp.topics for p in t.partitions if p.error_code == Errors.NONE]
    notes = [] if group.members else [f"Share group '{group_id}' has no active members."]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"])), notes


def share_in_flight(shard: Any, group_id: str) -> dict[tuple[str, int], int]:
    """``ShareGroup.in_flight`` of ``group_id``, run in its partition actor."""
    group = shard.groups.get(group_id)
    return group.in_flight() if group is not None and group.group_type == "share" else {}


def _units(work: m.ConnectorsAndTasks) -> list[tuple[str, int]]:
    return sorted([(c, -1) for c in work.connectors] + [(t.connector, t.task) for t in work.tasks])


def _pairs(tps: list[m.DescribedTopicPartitions]) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in tps for p in tp.partitions)


def _classic_assignment(protocol_type: str, data: bytes) -> list[tuple[str, int]]:
    """A classic member's partitions, when its group speaks the consumer protocol."""
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        assignment = decode_assignment(data)
    except ConsumerProtocolError:
        return []
    return sorted((t, p) for t, ps in assignment.assigned_partitions for p in ps)


def committed_offsets(cluster, group_id: str,
                      missing_ok: bool = False) -> dict[tuple[str, int], int]:
    """Every offset the group committed (OffsetFetch with no topics: all of them).

    ``missing_ok``: a coordinator that cannot fetch offsets (UNSUPPORTED_VERSION) means none.
    """
    resp = cluster.call(m.OffsetFetchRequest(group_id=group_id))
    if missing_ok and resp.error_code == Errors.UNSUPPORTED_VERSION:
        return {}
    if resp.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    raise_for(resp.error_code, resp.error_message,
               f"Fetching the offsets of group '{group_id}' failed")
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code == Errors.NONE and p.committed_offset >= 0:
                out[(t.name, p.partition_index)] = p.committed_offset
    return out


def describe_offsets(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    """Kafka's default describe view: a row per assigned or committed partition.

    Returns the rows and notes for a human ("has no active members"). A coordinator that
    cannot fetch offsets yet (UNSUPPORTED_VERSION) still gets the assignment, with a note.
    """
    group = _describe(cluster, group_id)
    notes = []
    try:
        offsets = committed_offsets(cluster, group_id)
    except AdminError as e:
        if e.error != Errors.UNSUPPORTED_VERSION:
            raise
        offsets = {}
        notes.append(f"Warning: committed offsets are unavailable: {e}")
    if not group.members:
        notes.append(f"Consumer group '{group_id}' has no active members.")
    rows = []
    for mem in group.members:
        for topic, p in mem.assignment:
            rows.append(_offset_row(group_id, topic, p, offsets.pop((topic, p), None), mem))
    rows += [_offset_row(group_id, t, p, off, None) for (t, p), off in offsets.items()]
    _with_lag(cluster, rows)
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    return rows, notes


def _with_lag(cluster, rows: list[Row]) -> None:
    """LOG-END-OFFSET and LAG from the upstream's end offsets, in front of one (Kafka's
    kafka-consumer-groups shows both; without an upstream, Cohort's stream has no end)."""
    ends = cluster.upstream_end_offsets([(r["topic"], r["partition"]) for r in rows])
    for r in rows:
        end = ends.get((r["topic"], r["partition"]))
        if end is not None:
            r["log_end_offset"] = end
            r["lag"] = None if r["current_offset"] is None else max(end - r["current_offset"], 0)


def _offset_row(group_id: str, topic: str, partition: int, offset: int | None,
                mem: _Member | None) -> Row:
    return {
        "group": group_id, "topic": topic, "partition": partition, "current_offset": offset,
        "log_end_offset": None, "lag": None,
        "consumer_id": mem.member_id if mem else None, "host": mem.host if mem else None,
        "client_id": mem.client_id if mem else None,
    }


def describe_members(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    group = _describe(cluster, group_id)
    notes = [] if group.members else [f"Consumer group '{group_id}' has no active members."]
    rows = [
        {
            "group": group_id, "consumer_id": mem.member_id, "group_instance_id": mem.instance_id,
            "host": mem.host, "client_id": mem.client_id, "partitions": len(mem.assignment),
            "current_epoch": mem.epoch, "current_assignment": assignment_text(mem.assignment),
            "target_epoch": group.assignment_epoch,
            "target_assignment": None if mem.target is None else assignment_text(mem.target),
        }
        for mem in group.members
    ]
    return rows, notes


def describe_state(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    group = _describe(cluster, group_id)
    return [{
        "group": group_id, "type": group.group_type, "coordinator": group.coordinator,
        "assignment_strategy": group.strategy or None, "state": group.state,
        "members": len(group.members), "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
    }], []


def assignment_text(pairs: list[tuple[str, int]]) -> str:
    """``foo:0,1;bar:2``, as Kafka's ``--members --verbose`` prints an assignment."""
    by_topic: dict[str, list[int]] = {}
    for t, p in pairs:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


# --------------------------------------------------------------------------- regex


def check_regex(pattern: str) -> None:
    """RE2, as the coordinator compiles a SubscribedTopicRegex; a bad one is refused."""
    try:
        compile_topic_regex(pattern)
    except InvalidRegex as e:
        raise AdminError(str(e), Errors.INVALID_REGULAR_EXPRESSION) from None


def validate_regex(pattern: str, topics: list) -> list[Row]:
    """The existing topics ``pattern`` matches (the whole name, as Kafka matches)."""
    check_regex(pattern)
    sizes = {t.name: t.num_partitions for t in topics}
    return [{"topic": t, "partitions": sizes[t]} for t in matching_topics(pattern, list(sizes))]


# --------------------------------------------------------------------------- delete


def delete_group(cluster, group_id: str) -> None:
    """DeleteGroups for one group: refused while it has members (NON_EMPTY_GROUP)."""
    resp = cluster.call(m.DeleteGroupsRequest(groups_names=[group_id]))
    result = next((r for r in resp.results if r.group_id == group_id), None)
    if result is None:
        raise AdminError(f"Group '{group_id}' could not be deleted: no result for it.",
                         Errors.UNKNOWN_SERVER_ERROR)
    if result.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    if result.error_code == Errors.NON_EMPTY_GROUP:
        raise AdminError(f"Group '{group_id}' could not be deleted: it is not empty "
                         f"(it has active members).", Errors.NON_EMPTY_GROUP)
    raise_for(result.error_code, result.error_message,
               f"Group '{group_id}' could not be deleted")
