"""Every group type a shard hosts, as one table: a group type is a row, not a wing.

h11's habit (the machine as data) and Kafka's ``Group`` interface in one place: the shard's
replay, tick, metadata and turn, DeleteGroups, the offsets rules, ListGroups, DescribeGroups,
the state tables and the metrics iterate these rows or look a group's row up by its
``group_type``; none of them asks "is this a consumer group?".

A row (``GroupType``) holds, for one type:

- ``name``: the group's ``group_type`` and the ListGroups type; ``metrics_label``: the tag
  its groups are counted under (seed 000's ``consumer`` | ``generic``);
- ``group_class`` and ``states`` (the states ListGroups may filter on);
- ``record_keys``: the record key types its rules replay (``replayer`` applies one);
- ``timer_key``: the base type of its timer keys; ``rules`` (shard -> its rules object, which
  answers ``on_timer`` and ``on_metadata``; a KIP-848-style type's ``epoch_turn`` ends each
  turn);
- the lifecycle answers: ``validate_offset_commit`` (refuse, or return which partitions the
  commit may write: KIP-1251's per-partition check), ``check_offset_fetch``, ``is_empty``
  (DeleteGroups), ``is_dead``, ``tombstones`` (the records that delete it), ``offsets_deletable``,
  ``subscribed_topics`` (offsets of these never expire, nor may be deleted),
  ``may_expire_offsets``, ``offsets_empty_since_ms``;
- the shapes others see: ``describe_classic`` (DescribeGroups), ``list_protocol_type``
  (ListGroups), ``classic_host`` (who answers classic requests to such a group).

Adding a group type: write its package (group, records, rules, timers), then one row below. The
shard, offsets, listing and tools pick it up; the API table (``protocol/api.py``) gets its
requests' rows.

Rows are in the order the shard visits types (metadata, end of turn, state tables): consumer,
classic, connect, share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any

from protocol import messages as m
from protocol.classic import lifecycle as classic
from protocol.classic.describe import describe_classic_group
from protocol.classic.group import ClassicGroup
from protocol.classic.states import ClassicGroupState
from protocol.classic.timers import ClassicTimer
from protocol.connect import group as connect_group
from protocol.connect.group import ConnectGroup
from protocol.connect.timers import ConnectTimer
from protocol.consumer import group as consumer_group
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.timers import ConsumerTimer
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import MetadataImage
from protocol.offsets.commit_checks import check_member_epoch, validate_consumer_commit
from protocol.records import (
    CONNECT_GROUP_KEYS,
    CONSUMER_GROUP_KEYS,
    SHARE_GROUP_KEYS,
    ConsumerGroupMetadataKey,
    GroupMetadataKey,
    Record,
)
from protocol.share import group as share_group
from protocol.share.describe import describe_as_classic as describe_share_as_classic
from protocol.share.group import ShareGroup
from protocol.share.lifecycle import ClassicRequestsRefused, refuse_offsets
from protocol.share.timers import ShareTimer

Group = Any  # a row's group_class: ConsumerGroup | ClassicGroup | ConnectGroup | ...
Shard = Any  # the GroupCoordinatorShard (or a ShardContext): rows never import it


def _always(_group: Group) -> bool:
    return True


def _never(_group: Group) -> bool:
    return False


def _no_fetch_check(_group: Group, _req: m.OffsetFetchRequest) -> None:
    return None


def _not_since(_group: Group) -> int | None:
    return None


@dataclass(frozen=True)
class GroupType:
    """One group type: what the shard, the offsets rules and the tools ask of its groups.

    Every callable is pure and answers for one group of this type; ``rules``, ``replayer``,
    ``describe_classic`` and ``classic_host`` take the shard that hosts it.
    """

    name: str
    metrics_label: str
    group_class: type
    states: tuple[str, ...]
    record_keys: tuple[type, ...]
    timer_key: type
    rules: Callable[[Shard], Any]
    # shard -> the function that applies one of its records to that shard (bound once)
    replayer: Callable[[Shard], Callable[[Record], None]]
    # Refuse the commit (CoordinatorError), or return which partitions it may write (None: all).
    validate_offset_commit: Callable[[Group, m.OffsetCommitRequest],
                                     Callable[[str, int], bool] | None]
    is_empty: Callable[[Group], bool]
    tombstones: Callable[[Group], list[Record]]
    # Topics subscribed by its members; ``strict``: None unless every subscription is known.
    subscribed_topics: Callable[[Group, MetadataImage, bool], set[str] | None]
    describe_classic: Callable[[Shard, Group, list], m.DescribeGroupsResponseGroup]
    list_protocol_type: Callable[[Group], str]
    # Who answers JoinGroup/SyncGroup/Heartbeat/LeaveGroup for such a group (its classic
    # members mid-migration); returns None for the classic rules themselves. A row without
    # one: classic requests get GROUP_ID_NOT_FOUND ("not a classic group"), as in Kafka 4.
    classic_host: Callable[[Shard], Any] | None
    check_offset_fetch: Callable[[Group, m.OffsetFetchRequest], None] = _no_fetch_check
    is_dead: Callable[[Group], bool] = _never
    offsets_deletable: Callable[[Group], bool] = _always
    may_expire_offsets: Callable[[Group], bool] = _always
    offsets_empty_since_ms: Callable[[Group], int | None] = _not_since


# ---------------------------------------------------------------------- consumer (KIP-848)


def _replay_consumer(shard: Shard, record: Record) -> None:
    """A consumer group record: its metadata tombstone drops the group; any other record
    creates the group when needed, then the rules see what changed (sessions, wake-ups)."""
    key = record.key
    gid = key.group_id  # type: ignore[attr-defined]
    group = shard.group_of(gid, "consumer")
    if type(key) is ConsumerGroupMetadataKey and record.value is None:
        if group is not None:
            del shard.groups[gid]
        return
    if group is None:
        group = shard.groups[gid] = ConsumerGroup(gid)
    before = group.members.get(getattr(key, "member_id", None) or "")
    group.replay(record)
    shard.consumer.after_replay(group, record, before)


def _check_consumer_fetch(group: ConsumerGroup, req: m.OffsetFetchRequest) -> None:
    """A fetch naming a member (or an epoch) must come from that member at its epoch."""
    if req.member_id or req.member_epoch >= 0:
        check_member_epoch(group, req.member_id or "", req.member_epoch)


CONSUMER = GroupType(
    name="consumer",
    metrics_label="consumer",
    group_class=ConsumerGroup,
    states=tuple(consumer_group.STATES),
    record_keys=CONSUMER_GROUP_KEYS,
    timer_key=ConsumerTimer,
    rules=attrgetter("consumer"),
    replayer=lambda shard: partial(_replay_consumer, shard),
    validate_offset_commit=validate_consumer_commit,
    check_offset_fetch=_check_consumer_fetch,
    is_empty=lambda g: not g.members,
    tombstones=consumer_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(image),
    describe_classic=lambda shard, g, history: shard.classic_members.describe(g, history),
    list_protocol_type=lambda g: "consumer",
    classic_host=attrgetter("classic_members"),
)


# ---------------------------------------------------------------------- classic


CLASSIC = GroupType(
    name="classic",
    metrics_label="generic",  # seed 000's tag (Kafka 4 renamed it classic)
    group_class=ClassicGroup,
    states=tuple(s.value for s in ClassicGroupState),
    record_keys=(GroupMetadataKey,),
    timer_key=ClassicTimer,
    rules=attrgetter("classic"),
    replayer=lambda shard: shard.classic.replay,
    validate_offset_commit=classic.validate_offset_commit,
    is_empty=classic.is_empty,
    is_dead=classic.is_dead,
    tombstones=classic.tombstones,
    offsets_deletable=classic.offsets_deletable,
    subscribed_topics=lambda g, image, strict: classic.subscribed_topics(g, strict),
    may_expire_offsets=classic.may_expire_offsets,
    offsets_empty_since_ms=classic.offsets_empty_since_ms,
    describe_classic=lambda shard, g, history: describe_classic_group(g, history),
    list_protocol_type=lambda g: g.protocol_type or "",
    classic_host=lambda shard: None,
)


# ---------------------------------------------------------------------- connect (seed 004)


def _refuse_connect_commit(group: ConnectGroup, req: m.OffsetCommitRequest) -> None:
    """A Connect group keeps no offsets: source offsets live in Connect's own topic and sink
    connectors commit under their own consumer groups (connect-<name>)."""
    raise CoordinatorError(
        Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a connect group: it has no offsets."
    )


CONNECT = GroupType(
    name="connect",
    metrics_label="connect",
    group_class=ConnectGroup,
    states=tuple(connect_group.STATES),
    record_keys=CONNECT_GROUP_KEYS,
    timer_key=ConnectTimer,
    rules=attrgetter("connect"),
    replayer=lambda shard: shard.connect.replay,
    validate_offset_commit=_refuse_connect_commit,
    is_empty=lambda g: not g.members,
    tombstones=connect_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: set(),  # workers subscribe to no topics
    describe_classic=lambda shard, g, history: shard.connect.describe_classic(g, history),
    list_protocol_type=lambda g: g.protocol_type or "",
    classic_host=attrgetter("connect_classic_members"),
)


# ---------------------------------------------------------------------- share (KIP-932)

_SHARE_CLASSIC_HOST = ClassicRequestsRefused()

SHARE = GroupType(
    name="share",
    metrics_label="share",
    group_class=ShareGroup,
    states=share_group.STATES,
    record_keys=SHARE_GROUP_KEYS,
    timer_key=ShareTimer,
    rules=attrgetter("share"),
    replayer=lambda shard: shard.share.replay,
    validate_offset_commit=refuse_offsets,
    check_offset_fetch=refuse_offsets,
    offsets_deletable=refuse_offsets,  # OffsetDelete: GROUP_ID_NOT_FOUND, as Kafka
    may_expire_offsets=_never,  # share groups have no offset expiry
    is_empty=lambda g: not g.members,
    tombstones=share_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(),
    describe_classic=lambda shard, g, history: describe_share_as_classic(g, history),
    list_protocol_type=lambda g: "share",
    classic_host=lambda shard: _SHARE_CLASSIC_HOST,
)


# ---------------------------------------------------------------------- the table

GROUP_TYPES: tuple[GroupType, ...] = (CONSUMER, CLASSIC, CONNECT, SHARE)
BY_NAME: dict[str, GroupType] = {row.name: row for row in GROUP_TYPES}
BY_RECORD_KEY: dict[type, GroupType] = {k: row for row in GROUP_TYPES for k in row.record_keys}
ALL_STATES: tuple[str, ...] = tuple(dict.fromkeys(s for row in GROUP_TYPES for s in row.states))


def type_of(group: Group) -> GroupType:
    """The row of a hosted group (every group class names its row by ``group_type``)."""
    return BY_NAME[group.group_type]


def group_counts(groups: Iterable[Group]) -> dict[str, int]:
    """How many of ``groups`` each row has, by metrics label (every label, zeros too)."""
    counts = dict.fromkeys((row.metrics_label for row in GROUP_TYPES), 0)
    for group in groups:
        counts[BY_NAME[group.group_type].metrics_label] += 1
    return counts
