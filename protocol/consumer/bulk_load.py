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
from itertools import compress
from operator import itemgetter

from protocol.codec import decode_key, decode_values
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.timers import MemberSession, RevocationDeadline
from protocol.records import (
    CONNECT_GROUP_TYPES,
    CONSUMER_GROUP_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    GroupMetadataKey,
)
from protocol.timers import Timers

_META = ConsumerGroupMetadataKey.TYPE
_PARTITION_META = ConsumerGroupPartitionMetadataKey.TYPE
_MEMBER = ConsumerGroupMemberMetadataKey.TYPE
_TARGET_META = ConsumerGroupTargetAssignmentMetadataKey.TYPE
_TARGET = ConsumerGroupTargetAssignmentMemberKey.TYPE
_CURRENT = ConsumerGroupCurrentMemberAssignmentKey.TYPE
_UNREVOKED = int(MemberState.UNREVOKED_PARTITIONS)
# Record types of the other group kinds: a group id they use is not a plain consumer group.
_OTHER_GROUP_TYPES = frozenset({GroupMetadataKey.TYPE, *CONNECT_GROUP_TYPES})
# (record type, key identity length) of well-formed consumer-group keys
_KEY_SHAPES = frozenset(
    {(_META, 2), (_PARTITION_META, 2), (_TARGET_META, 2), (_MEMBER, 3), (_TARGET, 3), (_CURRENT, 3)}
)
_TYPE_OF, _GROUP_ID, _LAST = itemgetter(0), itemgetter(1), itemgetter(-1)


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
            decode_key(key)  # raises RecordDecodeError for the first bad one, naming the field
    ids = set(map(_GROUP_ID, mine))
    ids.difference_update(taken)
    if None in blobs:
        ids.difference_update(
            key[1]
            for key, blob in zip(keys, blobs, strict=True)
            if blob is None and key[0] in CONSUMER_GROUP_TYPES
        )
    if not _OTHER_GROUP_TYPES.isdisjoint(map(_TYPE_OF, keys)):
        ids.difference_update(key[1] for key in keys if key[0] in _OTHER_GROUP_TYPES)
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
        for gid in dict.fromkeys(key[1] for key in keys):
            if gid not in groups:
                groups[gid] = ConsumerGroup(gid)
        self._keys += keys
        self._blobs += blobs

    def finish(self) -> None:
        keys, groups = self._keys, self._groups
        values = _decode_by_type(keys, self._blobs)
        metadata: dict[tuple[str, str], ConsumerGroupMemberMetadataValue] = {}
        current: dict[tuple[str, str], ConsumerGroupCurrentMemberAssignmentValue] = {}
        # (group id, member id) -> the type of the member's first record, in order of them
        first: dict[tuple[str, str], int] = {}
        revoking: list[tuple[str, str]] = []  # members whose current record revokes, in order
        for key, value in zip(keys, values, strict=True):
            kind = key[0]
            if kind == _TARGET:
                groups[key[1]].target[key[2]] = value
            elif kind in (_MEMBER, _CURRENT):
                member = key[1:]
                if member not in first:
                    first[member] = kind
                if kind == _MEMBER:
                    metadata[member] = value
                else:
                    current[member] = value
                    if value.state == _UNREVOKED:
                        revoking.append(member)
            elif kind == _META:
                groups[key[1]].group_epoch = value.epoch
            elif kind == _PARTITION_META:
                groups[key[1]].subscription_metadata = {t.topic_id: t for t in value.topics}
            else:  # _TARGET_META
                groups[key[1]].assignment_epoch = value.assignment_epoch
        self._build_members(first, metadata, current)
        self._own_partitions(current)
        self._schedule(first, metadata, revoking)

    def _build_members(self, first: dict, metadata: dict, current: dict) -> None:
        groups = self._groups
        for member in first:
            gid, mid = member
            meta, now = metadata.get(member), current.get(member)
            if meta is None:
                built = ConsumerGroupMember(mid, current=now)
            elif now is None:
                built = ConsumerGroupMember(mid, meta)
            else:
                built = ConsumerGroupMember(mid, meta, now)
            groups[gid].members[mid] = built
        for (gid, mid), meta in metadata.items():  # in the order of the metadata records
            group = groups[gid]
            group._subscriptions[(meta.subscribed_topic_names, meta.subscribed_topic_regex)] += 1
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

    def _schedule(self, first: dict, metadata: dict, revoking: list) -> None:
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
        for member in revoking:
            meta = metadata.get(member) if first[member] == _MEMBER else None
            timeout = max(meta.rebalance_timeout_ms if meta is not None else -1, 0)
            entries.append((RevocationDeadline(*member), now + timeout))
        self._timers.schedule_many(entries)


def _decode_by_type(keys: list[tuple], blobs: list[bytes]) -> list:
    """Every value, decoded with the record type's converter, one bulk call per type."""
    positions: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key[0], []).append(i)
    out: list = [None] * len(keys)
    for kind, where in positions.items():
        for i, value in zip(where, decode_values(kind, [blobs[i] for i in where]), strict=True):
            out[i] = value
    return out

