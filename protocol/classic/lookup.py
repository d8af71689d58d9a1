"""Finding the group and member a classic request names, with the errors Kafka answers.

Shared by every classic request, so that JoinGroup, SyncGroup, Heartbeat and LeaveGroup refuse
an unknown member, a fenced static member or a stale generation in exactly the same words.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.errors import CoordinatorError, Errors


def group_for(groups: dict, group_id: str, member_id: str) -> object:
    """The group a SyncGroup or Heartbeat speaks to, of any type (a consumer or Connect group
    hosts classic members during an online migration: ``ShardContext.classic_host`` says who
    answers, or refuses a type that takes no classic requests)."""
    if not group_id:
        raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
    group = groups.get(group_id)
    if group is None:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
        )
    return group


def existing_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> ClassicMember:
    """The member a request names; a static member replaced by a newer process is fenced."""
    if instance_id is not None:
        holder = group.static_members.get(instance_id)
        if holder is not None and holder != member_id:
            raise CoordinatorError(
                Errors.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was replaced "
                f"by member {holder}.",
            )
    member = group.members.get(member_id)
    if member is None or (instance_id is not None and member.group_instance_id != instance_id):
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {member_id} is not a member of group {group.group_id}.",
        )
    return member


def illegal_generation(generation: int, group: ClassicGroup) -> CoordinatorError:
    return CoordinatorError(
        Errors.ILLEGAL_GENERATION,
        f"Generation {generation} is not the group's current generation {group.generation_id}.",
    )


def protocols_of(req: m.JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, p.metadata) for p in req.protocols]


def rebalance_timeout_of(req: m.JoinGroupRequest) -> int:
    """JoinGroup v0 had no rebalance timeout: the session timeout served as both."""
    return req.session_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms
