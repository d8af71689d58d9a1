"""What a group type is to the rest of the house: the shape of one row of the group-type table.

Kafka's ``Group`` interface and kfake's rule ("a new kind is a row, not a wing") in one
dataclass: everything the shard, the offsets rules, ListGroups, DescribeGroups, the runtime's
metrics and wake-ups, the state tables and the admin tools ask of a group type, they ask of its
row, so none of them asks "is this a consumer group?". Each type's package builds its row
(``<type>/row.py``: ``ROW``) and ``protocol.group_types`` lists the rows; a new type is its
package, its row there and its requests' rows in the API table (``protocol.api``).

This module is only the shape (so a package can build its row without importing the table,
which imports every package).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol import messages as m
from protocol.admin_view import AdminDescribe
from protocol.metadata import MetadataImage
from protocol.records import Record

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


def summarize_modern(group: Group) -> dict:
    """A KIP-848-style group's summary: state, epochs and member counts, cheap enough to poll
    for a group of 10,000 members (``GroupType.summarize``)."""
    at_epoch = sum(1 for mm in group.members.values() if mm.member_epoch == group.group_epoch)
    return {
        "state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "members": len(group.members),
        "members_at_group_epoch": at_epoch,
    }


@dataclass(frozen=True)
class WakeUps:
    """A type whose members' clients the runtime may wake (``actors/runtime/wakers.py``): its
    rules keep ``wake_ups`` (``take(groups)``: whom the events since the last call gave a
    reason to heartbeat now, issue 11)."""

    request: type  # the heartbeat whose sender may be woken
    member_key: type  # the record whose tombstone ends a membership: never woken again


# (shard, compacted keys, their encoded values) -> a bulk loader (``add(key, blob)``,
# ``add_all(keys, blobs)``, ``finish()``) and, per record, whether it takes it.
BulkLoad = Callable[[Any, list[tuple], list[bytes | None]], tuple[Any, list[bool]]]


@dataclass(frozen=True)
class GroupType:
    """One group type: what the shard, the offsets rules and the tools ask of its groups.

    Every callable is pure and answers for one group of this type (or builds what the shard
    hosts for the type: ``rules``, ``helpers``, ``replayer``).
    """

    # The group's ``group_type`` and the ListGroups type; ``metrics_label``: the ``protocol``
    # tag of the ``group_count`` gauge its groups are counted under (seed 000: consumer |
    # generic).
    name: str
    metrics_label: str
    group_class: type
    states: tuple[str, ...]  # the states ListGroups may filter on
    # Its records, key class -> value class (the codec's registry, the replay dispatch), the
    # group's own record first: that record's tombstone deletes the group, and with it every
    # record of these types whose first key field is the group id when there are several
    # (compaction's tombstone scope).
    record_schemas: Mapping[type, type]
    timer_key: type  # the base type of its timer keys (the shard routes a due timer by type)
    # shard -> the rules object the shard hosts as ``shard.<name>``; it answers ``on_timer``
    # and ``on_metadata``, and a KIP-848-style type's ``epoch_turn`` ends each turn.
    rules: Callable[[Shard], Any]
    # shard -> the function that applies one of its records to that shard (bound once)
    replayer: Callable[[Shard], Callable[[Record], None]]
    # Refuse the commit (CoordinatorError), or say which of its partitions may land: (topic id,
    # partition) -> bool (KIP-1251's per-partition check; one known partition refused refuses
    # the commit's every known partition with STALE_MEMBER_EPOCH, as Kafka); None: every one.
    validate_offset_commit: Callable[
        [Group, m.OffsetCommitRequest], Callable[[str, int], bool] | None
    ]
    is_empty: Callable[[Group], bool]  # DeleteGroups deletes only an empty group
    tombstones: Callable[[Group], list[Record]]  # the records that delete it
    # Topics subscribed by its members; ``strict``: None unless every subscription is known.
    subscribed_topics: Callable[[Group, MetadataImage, bool], set[str] | None]
    describe_classic: Callable[[Shard, Group, list], m.DescribeGroupsResponseGroup]
    list_protocol_type: Callable[[Group], str]
    # Who answers JoinGroup/SyncGroup/Heartbeat/LeaveGroup for such a group (its classic
    # members mid-migration); returns None for the classic rules themselves. A row without
    # one: classic requests get GROUP_ID_NOT_FOUND ("not a classic group"), as in Kafka 4.
    classic_host: Callable[[Shard], Any] | None
    admin: AdminDescribe  # how ``cohort groups --describe`` shows its groups
    # (attribute, shard -> object): what else the shard hosts for this type, under those
    # names, for the other rules to reach (the online migrations of a type and its classic
    # members).
    helpers: tuple[tuple[str, Callable[[Shard], Any]], ...] = ()
    # The heartbeat a turn takes in two steps, ``rules.admit(req)`` (a reply, or the admitted
    # heartbeat: ``request``, ``group_id``, ``member_id``) and, once every admitted
    # heartbeat's epoch bump and target are settled, ``rules.complete(admitted)``: a turn's
    # heartbeats share one epoch bump and one target computation per group. None: its
    # requests are dispatched one by one through the API table.
    heartbeat: type | None = None
    wake_ups: WakeUps | None = None
    # Loading its groups from compacted records at once instead of one replay per record.
    bulk_load: BulkLoad | None = None
    # State, epochs and member counts of one group (``OffsetsPartition.summarize``).
    summarize: Callable[[Group], dict] = summarize_modern
    # Whether the retention check deletes such a group once it is empty and has no offsets
    # (Kafka's ``Group.shouldExpire``: true but for share groups).
    expires_when_empty: bool = True
    # Its own metrics beside ``group_count`` (Kafka's per-type ``<type>-group-count`` by state
    # and ``<type>-group-rebalance-rate/count``): the gauge counting its groups by state, and
    # the name of the counter (``_count``) and rate (``_rate``) of its epoch bumps (its own
    # record written with a value). None: none published.
    state_gauge: str | None = None
    rebalance_metric: str | None = None
    # Its groups as rows of the export tables (``actors/tools/state_tables.py``, whose table
    # name -> column builder it fills: ``add(**row)``, ``extend(**columns)``,
    # ``extend_partitions(partitions, **fixed)``), given its groups in id order and the shard.
    # None: each group's ``groups`` row alone, from what every group answers.
    export: Callable[[list[Group], Shard, Mapping[str, Any]], None] | None = None
    # Its own export tables beside the shared ones: name -> columns (name, type, nullable), the
    # types being "string", "int32", "int64", "bool" (Arrow's, without the state tables'
    # floor importing Arrow here).
    export_tables: Mapping[str, tuple[tuple[str, str, bool], ...]] = field(default_factory=dict)
    check_offset_fetch: Callable[[Group, m.OffsetFetchRequest], None] = _no_fetch_check
    is_dead: Callable[[Group], bool] = _never
    offsets_deletable: Callable[[Group], bool] = _always
    may_expire_offsets: Callable[[Group], bool] = _always
    offsets_empty_since_ms: Callable[[Group], int | None] = _not_since
    # Whether its groups commit offsets at all (an admin reset reads every group that does).
    keeps_offsets: bool = True

    @property
    def record_keys(self) -> tuple[type, ...]:
        return tuple(self.record_schemas)

    @property
    def group_key(self) -> type:
        """The group's own record: its tombstone deletes the group."""
        return next(iter(self.record_schemas))
