"""Consumer groups built from their compacted records at once, not one ``replay`` per record.

A restarted partition replays the records that survive compaction before it serves again; for
consumer groups that is three records per member (metadata, target, current assignment) and
three per group. Replaying each through ``GroupCoordinatorShard.replay`` costs a decoded
``Record``, a dispatch, a new member per record (``dataclasses.replace``), the owners map
updated and the member's timers checked per record. Here the values are decoded per record type
(one msgpack call per chunk), each member is built once from its latest two records, and what
``ConsumerGroup.replay`` derives record by record (the owners of partitions, static members,
the subscription counts, the members' session and revocation deadlines) is computed once per
group at the end.

The result equals replaying the records in order (the tests and ``bench/load.py`` check it)
under the conditions compaction guarantees, which ``BulkGroups.eligible`` checks: at most one
record per key, no tombstones, and a group id used by consumer-group records only, in a shard
that holds no group of that id yet. Any other group is replayed record by record by the
caller. Timers are scheduled in record order among the bulk groups; their order relative to
the groups replayed record by record is not kept (a reload restarts every session from load
time anyway, so no order of equal deadlines means more than another).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress, groupby
from operator import attrgetter, itemgetter

from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.records import (
    SCHEMAS,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from protocol.consumer.sessions import MemberSession, RevocationDeadline
from protocol.records import GroupRebalanceHistoryKey
from protocol.timers import Timers

_META = ConsumerGroupMetadataKey.TYPE
_PARTITION_META = ConsumerGroupPartitionMetadataKey.TYPE
_MEMBER = ConsumerGroupMemberMetadataKey.TYPE
_TARGET_META = ConsumerGroupTargetAssignmentMetadataKey.TYPE
_TARGET = ConsumerGroupTargetAssignmentMemberKey.TYPE
_CURRENT = ConsumerGroupCurrentMemberAssignmentKey.TYPE
_UNREVOKED = int(MemberState.UNREVOKED_PARTITIONS)
# The record types of a consumer group, and the one record type besides them that may name a
# plain consumer group (its rebalance history); any other type naming a group id means that id
# is not a plain consumer group's (another type's records, or a protocol conversion's).
CONSUMER_GROUP_TYPES = frozenset(k.TYPE for k in SCHEMAS)
_HISTORY = GroupRebalanceHistoryKey.TYPE
# (record type, key identity length) of well-formed consumer-group keys
_KEY_SHAPES = frozenset(
    {(_META, 2), (_PARTITION_META, 2), (_TARGET_META, 2), (_MEMBER, 3), (_TARGET, 3), (_CURRENT, 3)}
)
_TYPE_OF, _GROUP_ID, _LAST = itemgetter(0), itemgetter(1), itemgetter(-1)
_MEMBER_OF = itemgetter(1, 2)  # (group id, member id) of a member's key identity
_GROUP_OF_ITEM = lambda item: item[0][0]  # noqa: E731 ((group id, member id), value) -> group id
_VALUE_OF_ITEM = itemgetter(1)
_MEMBER_RECORDS = frozenset({_MEMBER, _CURRENT})  # the records that create a member
_SUBSCRIPTION = attrgetter("subscribed_topic_names", "subscribed_topic_regex", "topic_view")


def bulk_loader(
    shard, keys: list[tuple], blobs: list[bytes | None]
) -> tuple[BulkGroups, list[bool]]:
    """The consumer row's ``bulk_load``: a loader for the eligible groups among ``keys``, and
    for each record whether it takes it (the rest are replayed one by one)."""
    bulk = BulkGroups(
        shard.groups, shard.timers, shard.consumer.sessions.session_timeout_ms, shard.now_ms
    )
    ids = eligible_groups(keys, blobs, shard.groups)
    return bulk, [key[0] in CONSUMER_GROUP_TYPES and key[1] in ids for key in keys]


def _codec():
    """The codec, imported when a load runs: it reads the group-type table, whose consumer row
    names this module, so importing it with this module would go round in a circle."""
    from protocol import codec

    return codec


def eligible_groups(keys: list[tuple], blobs: list[bytes | None], taken: Iterable[str]) -> set[str]:
    """The group ids among ``keys`` (key identities, as ``split_records`` gives them) whose
    records can be loaded in bulk: consumer-group records only, no tombstone, no key twice,
    and no group of that id in ``taken`` (the shard's groups before the load).

    The keys' fields are checked as decoding them would (RecordDecodeError), with a few
    C-level passes over all of them.
    """
    mine = list(compress(keys, map(CONSUMER_GROUP_TYPES.__contains__, map(_TYPE_OF, keys))))
    if not mine:
        return set()
    if not (
        set(zip(map(_TYPE_OF, mine), map(len, mine), strict=True)) <= _KEY_SHAPES
        and set(map(type, map(_GROUP_ID, mine))) == {str}
        and set(map(type, map(_LAST, mine))) == {str}
    ):
        for key in mine:
            _codec().decode_key(key)  # RecordDecodeError for the first bad one, naming the field
    ids = set(map(_GROUP_ID, mine))
    ids.difference_update(taken)
    if None in blobs:
        ids.difference_update(
            key[1]
            for key, blob in zip(keys, blobs, strict=True)
            if blob is None and key[0] in CONSUMER_GROUP_TYPES
        )
    others = set(map(_TYPE_OF, keys)) - CONSUMER_GROUP_TYPES - {_HISTORY}
    if others:
        ids.difference_update(key[1] for key in keys if key[0] in others)
    if len(set(mine)) != len(mine):  # a key twice: not compacted, replay those groups in order
        seen: set[tuple] = set()
        ids.difference_update(key[1] for key in mine if key in seen or seen.add(key))
    return ids


class BulkGroups:
    """Collects the records of the eligible groups (``add``, in log order), then builds the
    groups (``finish``). Each group takes its place in ``groups`` at its first record, as
    replay would have created it there."""

    def __init__(
        self,
        groups: dict,
        timers: Timers,
        session_timeout_ms: Callable[[str], int],  # group id -> its session timeout
        now_ms: int,
    ) -> None:
        self._groups = groups
        self._timers = timers
        self._session_timeout_ms = session_timeout_ms
        self._now_ms = now_ms
        self._keys: list[tuple] = []
        self._blobs: list[bytes] = []

    def add(self, key: tuple, blob: bytes) -> None:
        if key[1] not in self._groups:
            self._groups[key[1]] = ConsumerGroup(key[1])
        self._keys.append(key)
        self._blobs.append(blob)

    def add_all(self, keys: list[tuple], blobs: list[bytes]) -> None:
        """``add`` for many records at once (the groups in order of their first record)."""
        groups = self._groups
        for gid in dict.fromkeys(map(_GROUP_ID, keys)):
            if gid not in groups:
                groups[gid] = ConsumerGroup(gid)
        self._keys += keys
        self._blobs += blobs

    def finish(self) -> None:
        """Build the groups: each record type's values decoded and applied in one pass, in
        record order within the type (a key is written once, so no two passes touch the same
        field), then the members, the owners and the timers."""
        groups = self._groups
        by_type = _by_type(self._keys, self._blobs)
        for key, value in _pairs(by_type, _META):
            groups[key[1]].group_epoch = value.epoch
        for key, value in _pairs(by_type, _PARTITION_META):
            groups[key[1]].subscription_metadata = {t.topic_id: t for t in value.topics}
        for key, value in _pairs(by_type, _TARGET_META):
            group = groups[key[1]]
            group.assignment_epoch = value.assignment_epoch
            group.assignment_timestamp = value.assignment_timestamp
        for key, value in _pairs(by_type, _TARGET):
            groups[key[1]].target[key[2]] = value
        meta_keys, metas = by_type.get(_MEMBER, ([], []))
        current_keys, currents = by_type.get(_CURRENT, ([], []))
        # (group id, member id) -> its latest metadata / current assignment, in record order
        metadata = dict(zip(map(_MEMBER_OF, meta_keys), metas, strict=True))
        current = dict(zip(map(_MEMBER_OF, current_keys), currents, strict=True))
        # every member, in the order of its first record (the one that created it in replay)
        first = _first_seen(self._keys)
        self._build_members(first, metadata, current)
        self._own_partitions(current)
        self._schedule(first, metadata, current)

    def _build_members(self, first: dict, metadata: dict, current: dict) -> None:
        groups = self._groups
        make = ConsumerGroupMember.of
        for member in first:
            gid, mid = member
            groups[gid].members[mid] = make(mid, metadata.get(member), current.get(member))
        # subscription counts and static members, in the order of the metadata records
        for gid, run in groupby(metadata.items(), key=_GROUP_OF_ITEM):
            group = groups[gid]
            run = list(run)
            group._subscriptions.update(map(_SUBSCRIPTION, map(_VALUE_OF_ITEM, run)))
            for (_, mid), meta in run:
                if meta.instance_id is not None:
                    group.static_members[meta.instance_id] = mid

    def _own_partitions(self, current: dict) -> None:
        """Who holds each partition (assigned or pending revocation), set once per member."""
        groups = self._groups
        for (gid, mid), value in current.items():
            owners = groups[gid].owners
            for held in (value.assigned_partitions, value.partitions_pending_revocation):
                for topic, partitions in held.items():
                    for p in partitions:
                        holder = owners.setdefault((topic, p), mid)
                        # Invariant 1: a partition is never held by two members at once.
                        assert holder == mid, f"{(topic, p)} held by {holder} and {mid}"

    def _schedule(self, first: dict, metadata: dict, current: dict) -> None:
        """A session from now for each member; a revocation deadline for each revoking one,
        with the rebalance timeout its metadata had when its current record came."""
        now = self._now_ms
        group_timeout: dict[str, int] = {}
        entries: list[tuple[object, int]] = []
        for member, kind in first.items():
            gid = member[0]
            timeout = group_timeout.get(gid)
            if timeout is None:
                timeout = group_timeout[gid] = self._session_timeout_ms(gid)
            classic = metadata[member].classic_member_metadata if kind == _MEMBER else None
            if classic is not None:
                timeout = classic.session_timeout_ms
            entries.append((MemberSession(*member), now + timeout))
        for member, value in current.items():
            if value.state != _UNREVOKED:
                continue
            meta = metadata[member] if first[member] == _MEMBER else None
            timeout = max(meta.rebalance_timeout_ms if meta is not None else -1, 0)
            entries.append((RevocationDeadline(*member), now + timeout))
        self._timers.schedule_many(entries)


def _by_type(keys: list[tuple], blobs: list[bytes]) -> dict[int, tuple[list, list]]:
    """Record type -> (its keys, their decoded values), each in record order (one bulk
    decode per type)."""
    where: dict[int, list[int]] = {}
    for i, kind in enumerate(map(_TYPE_OF, keys)):
        at = where.get(kind)
        if at is None:
            at = where[kind] = []
        at.append(i)
    return {
        kind: (_take(keys, at), _codec().decode_values(kind, _take(blobs, at)))
        for kind, at in where.items()
    }


def _take(items: list, at: list[int]) -> list:
    return [items[at[0]]] if len(at) == 1 else list(itemgetter(*at)(items))


def _pairs(by_type: dict[int, tuple[list, list]], kind: int) -> Iterable[tuple]:
    keys, values = by_type.get(kind, ((), ()))
    return zip(keys, values, strict=True)


def _first_seen(keys: list[tuple]) -> dict[tuple[str, str], int]:
    """Each member -> the type of its first record (metadata or current assignment), in the
    order of those first records: the order in which replay creates the members."""
    records = list(compress(keys, map(_MEMBER_RECORDS.__contains__, map(_TYPE_OF, keys))))
    members = list(map(_MEMBER_OF, records))
    earliest = dict(zip(reversed(members), map(_TYPE_OF, reversed(records)), strict=True))
    return {member: earliest[member] for member in dict.fromkeys(members)}
