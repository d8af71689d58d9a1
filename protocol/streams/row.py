"""The streams group type (KIP-1071) as one row of the group-type table, and what a streams
group answers to the requests of other group types, as Kafka 4.4 does.

A group id belongs to the type of its first member. To a streams group: OffsetCommit and
OffsetFetch from a member are checked against its epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH:
``StreamsGroup.validateOffsetCommit/Fetch``), an admin's (epoch -1) commit only while it is
empty; a classic JoinGroup is INCONSISTENT_GROUP_PROTOCOL and SyncGroup / Heartbeat /
LeaveGroup UNKNOWN_MEMBER_ID; a consumer, Connect or share heartbeat GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from protocol import messages as m
from protocol.admin_view import AdminDescribe, GroupView, MemberView
from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType
from protocol.streams import group as streams_group
from protocol.streams import messages as sm
from protocol.streams import records
from protocol.streams.describe import describe_as_classic
from protocol.streams.group import StreamsGroup
from protocol.streams.member import StreamsMemberState
from protocol.streams.rules import StreamsGroupRules
from protocol.streams.sessions import StreamsTimer


class ClassicRequestsRefused:
    """The classic host of a streams group: every classic request refused, changing nothing
    (Kafka's answers to a classic member of a group of another type)."""

    def join(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.INCONSISTENT_GROUP_PROTOCOL,
            f"Group {group.group_id} is a streams group: it takes no classic members.")

    def _unknown(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {getattr(req, 'member_id', '')} is not a classic member of streams group "
            f"{group.group_id}.")

    sync = heartbeat = leave = _unknown


_CLASSIC_HOST = ClassicRequestsRefused()


def _source_topics(group: StreamsGroup) -> set[str]:
    """The topics the group reads (its subtopologies' sources, internal ones included)."""
    t = group.topology
    if t is None:
        return set()
    return {n for s in t.subtopologies for n in
            (*s.source_topics, *(x.name for x in s.repartition_source_topics))}


def _check_member(group: StreamsGroup, member_id: str, epoch: int,
                  older_ok: bool = False) -> Any:
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID,
                               f"Member {member_id} is not a member of group {group.group_id}.")
    if epoch > member.member_epoch or (epoch < member.member_epoch and not older_ok):
        raise CoordinatorError(
            Errors.STALE_MEMBER_EPOCH,
            f"The received member epoch {epoch} does not match the expected member epoch "
            f"{member.member_epoch}.")
    return member


def validate_commit(group: StreamsGroup, req: m.OffsetCommitRequest
                    ) -> Callable[[str, int], bool] | None:
    """Kafka 4.4's ``StreamsGroup.validateOffsetCommit``: an admin commit (epoch < 0) only to
    an empty group; a member's at its epoch (every partition may land), never at a newer one
    (STALE_MEMBER_EPOCH); at an older epoch, only the partitions of active tasks it has held
    since that epoch or before (KAFKA-19779: a commit racing a rebalance that did not move
    its tasks), the others STALE_MEMBER_EPOCH one by one."""
    epoch = req.generation_id_or_member_epoch
    if epoch < 0 and not group.members:
        return None
    member = _check_member(group, req.member_id, epoch, older_ok=True)
    if epoch == member.member_epoch:
        return None
    held = member.task_epochs()
    readers = group.configured.readers if group.configured is not None else {}

    def may_land(topic_id: str, partition: int) -> bool:
        return any(held.get((sub, partition), epoch + 1) <= epoch
                   for sub in readers.get(topic_id, ()))

    return may_land


def _check_fetch(group: StreamsGroup, req: m.OffsetFetchRequest) -> None:
    if req.member_id or req.member_epoch >= 0:
        _check_member(group, req.member_id or "", req.member_epoch)


_STATES = {int(s): s.label for s in StreamsMemberState}
TASK_COLUMNS = (("group_id", "string", False), ("member_id", "string", False),
                ("kind", "string", False), ("role", "string", False),
                ("subtopology_id", "string", False), ("partition", "int32", False))


def _export(groups: list[StreamsGroup], shard: Any, tables: Mapping[str, Any]) -> None:
    """The groups' and members' rows in the shared tables; every task (current and target, by
    role) in the row's own ``streams_tasks`` table."""
    for group in groups:
        gid = group.group_id
        tables["groups"].add(
            group_id=gid, group_type=group.group_type, protocol_type=group.protocol_type,
            state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor="sticky",
            member_count=len(group.members))
        for mid, mm in sorted(group.members.items()):
            tables["members"].add(
                group_id=gid, member_id=mid, instance_id=mm.instance_id, rack_id=mm.rack_id,
                client_id=mm.client_id or "", client_host=mm.client_host or "",
                member_epoch=mm.member_epoch,
                state=_STATES.get(mm.current.state, StreamsMemberState.UNKNOWN.label),
                subscribed_topics=[], subscribed_topic_regex=None, protocol="streams")
            t = group.target.get(mid, group.NO_TARGET)
            c = mm.current
            for kind, maps in (("current", (c.active_tasks, c.standby_tasks, c.warmup_tasks)),
                               ("target", (t.active_tasks, t.standby_tasks, t.warmup_tasks))):
                for role, tasks in zip(("active", "standby", "warmup"), maps, strict=True):
                    for sub, ps in sorted(tasks.items()):
                        for p in ps:
                            tables["streams_tasks"].add(group_id=gid, member_id=mid, kind=kind,
                                                        role=role, subtopology_id=sub,
                                                        partition=p)


def _tasks(a: sm.StreamsAssignment) -> list[tuple[str, int]]:
    """Every task of ``a`` as (subtopology, partition); a standby's or warm-up's subtopology
    labelled so (``0 (standby)``), as ``kafka-streams-groups --members`` lists them apart."""
    out = []
    for role, ts in (("", a.active_tasks), (" (standby)", a.standby_tasks),
                     (" (warmup)", a.warmup_tasks)):
        out += [(t.subtopology_id + role, p) for t in ts for p in t.partitions]
    return out


def _admin_view(d: sm.StreamsDescribedGroup) -> GroupView:
    """A StreamsGroupDescribe entry as ``cohort groups --describe`` shows it: each member's
    tasks (active, standby, warm-up) as (subtopology, partition), its target's too."""
    return GroupView(
        d.group_state, d.assignor_name or "sticky", d.group_epoch, d.assignment_epoch,
        [MemberView(x.member_id, x.instance_id, x.client_host, x.client_id, x.member_epoch,
                    _tasks(x.assignment), _tasks(x.target_assignment))
         for x in d.members])


ROW = GroupType(
    name="streams",
    metrics_label="streams",
    group_class=StreamsGroup,
    states=streams_group.STATES,
    record_schemas=records.SCHEMAS,
    timer_key=StreamsTimer,
    rules=StreamsGroupRules,
    replayer=lambda shard: shard.streams.replay,
    validate_offset_commit=validate_commit,
    check_offset_fetch=_check_fetch,
    is_empty=lambda g: not g.members,
    tombstones=streams_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: _source_topics(g),
    describe_classic=lambda shard, g, history: describe_as_classic(g, history),
    list_protocol_type=lambda g: "streams",
    classic_host=lambda shard: _CLASSIC_HOST,
    admin=AdminDescribe(lambda gid: sm.StreamsGroupDescribeRequest(group_ids=[gid]),
                        _admin_view),
    heartbeat=sm.StreamsGroupHeartbeatRequest,
    export=_export,
    export_tables={"streams_tasks": TASK_COLUMNS},
    state_gauge="streams_group_count",
    rebalance_metric="streams_group_rebalance",
)
