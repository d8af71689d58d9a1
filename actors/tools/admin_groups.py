"""``cohort groups --list / --describe / --delete / --validate-regex``: the groups as they are.

Kafka has one describe API per group type (ConsumerGroupDescribe for KIP-848 groups,
DescribeGroups for classic ones, ShareGroupDescribe...) and a group known only by its committed
offsets has no group object at all; this module hides those differences behind one ``_Group``
view, made by the group's row of the group-type table (``GroupType.admin``: its describe
request and view, ``protocol/admin_view.py``), so that the offsets, members and state views
(and ``admin_offsets``, which needs a group's state and offsets before a reset) see every group
the way Kafka's tool shows it. A row may show a table of its own in place of the offsets or
members one (``describe_detail``: a share group's share-partitions, a Connect group's workers).
This module names no group type.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from actors.tools.admin import AdminError, Columns, Row, missing_group, raise_for
from protocol import messages as m
from protocol.admin_view import DetailTable, MemberView
from protocol.api import APIS
from protocol.consumer.regex import InvalidRegex, compile_topic_regex, matching_topics
from protocol.errors import CoordinatorError, Errors
from protocol.group_types import BY_NAME, SIMPLE_GROUPS

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
STATE_COLUMNS: Columns = [
    ("GROUP", "group"), ("COORDINATOR", "coordinator"),
    ("ASSIGNMENT-STRATEGY", "assignment_strategy"),
    ("STATE", "state"), ("#MEMBERS", "members"), ("GROUP-EPOCH", "group_epoch"),
    ("ASSIGNMENT-EPOCH", "assignment_epoch"),
]
REGEX_COLUMNS: Columns = [("TOPIC", "topic"), ("PARTITIONS", "partitions")]


# --------------------------------------------------------------------------- list


def list_groups(cluster, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[Row]:
    """Every group, filtered as ListGroups filters (states in either spelling; types by
    their rows' names)."""
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
    it is shown as Kafka shows it, an empty group of the row ``SIMPLE_GROUPS`` (classic).
    """
    for g in cluster.list_groups():
        if g.group_id == group_id:
            return g
    if committed_offsets(cluster, group_id, missing_ok=True):
        return _simple_group(group_id)
    raise missing_group(group_id)


def _simple_group(group_id: str) -> m.ListedGroup:
    return m.ListedGroup(group_id, "", "empty", SIMPLE_GROUPS.name)


# --------------------------------------------------------------------------- describe


@dataclasses.dataclass
class _Group:
    group_id: str
    group_type: str
    state: str
    coordinator: str  # the offsets partition actor that owns the group
    strategy: str
    group_epoch: int
    assignment_epoch: int | None
    members: list[MemberView]


def _describe(cluster, group_id: str) -> _Group:
    """One group through the describe API of its type, as its row of the group-type table
    says (ListGroups tells the type)."""
    listed = listed_group(cluster, group_id)
    coordinator = f"offsets-{cluster.partition_for(group_id)}"
    row = BY_NAME[listed.group_type]
    request = row.admin.request(group_id)
    reply = cluster.call(request)
    d = getattr(reply, APIS[type(request)].per_group.list_field)[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND and listed == _simple_group(group_id):
        return _Group(group_id, row.name, "empty", coordinator, "", -1, None, [])  # offsets only
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    view = row.admin.view(d)
    if view is None:
        raise missing_group(group_id)
    return _Group(group_id, row.name, view.state, coordinator, view.strategy, view.group_epoch,
                  view.assignment_epoch, view.members)


def describe_detail(cluster, group_id: str, view: str,
                    listed: m.ListedGroup | None = None) -> DetailTable | None:
    """The table the group's row shows in place of ``view``'s ("offsets", "members"), or None
    when it shows the default one. ``listed``: its ListGroups entry, if known."""
    listed = listed if listed is not None else listed_group(cluster, group_id)
    detail = BY_NAME[listed.group_type].admin.details.get(view)
    if detail is None:
        return None
    return _refusing(detail, _Port(cluster), listed, int(time.time() * 1000))


class _Port:
    """A ``Cluster`` as a row's admin detail sees it (``protocol.admin_view.AdminPort``)."""

    def __init__(self, cluster) -> None:
        self._cluster = cluster

    def call(self, request: object) -> object:
        return self._cluster.call(request)

    def query(self, group_id: str, fn: Callable[[Any], Any]) -> Any:
        return self._cluster.query(group_id, fn)


def _refusing(fn: Callable[..., Any], *args: object) -> Any:
    """``fn(*args)``; a pure refusal (``CoordinatorError``) becomes the CLI's, same error."""
    try:
        return fn(*args)
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None


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
                mem: MemberView | None) -> Row:
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
