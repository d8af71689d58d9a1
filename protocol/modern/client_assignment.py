"""The checks every modern group's PrepareAssignment and InstallAssignment share (seeds 000
and 004, in their order), and the epoch an installed assignment may have.

Only the member chosen to compute the group's assignment may ask for its inputs or install
its result, at its current epoch. The error for a wrong epoch is the type's own: a consumer
gets STALE_MEMBER_EPOCH, a worker FENCED_MEMBER_EPOCH (seed 004).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.errors import CoordinatorError, Errors

if TYPE_CHECKING:
    from protocol.context import ShardContext


def chosen_member(
    ctx: ShardContext,
    group_type: str,
    req: Any,
    wrong_epoch: Errors,
    chosen: Callable[[Any], str | None],
) -> tuple[Any, Any]:
    """The group and the member behind ``req`` (group_id, member_id, member_epoch), once it
    is shown to be the member ``chosen(group)`` names; the seed's error otherwise."""
    group_id, member_id, member_epoch = req.group_id, req.member_id, req.member_epoch
    if not group_id:
        raise CoordinatorError(Errors.INVALID_REQUEST, "GroupId can't be empty.")
    if not member_id:
        raise CoordinatorError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
    if member_epoch < 0:
        raise CoordinatorError(Errors.INVALID_REQUEST, "MemberEpoch must be >= 0.")
    group = ctx.groups.get(group_id)
    if group is None or group.group_type != group_type:
        kind = f"is not a {group_type} group" if group is not None else "does not exist"
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} {kind}.")
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not in group {group_id}."
        )
    if member.member_epoch != member_epoch:
        raise CoordinatorError(
            wrong_epoch,
            f"MemberEpoch {member_epoch} does not match the member's epoch {member.member_epoch}.",
        )
    if chosen(group) != member_id:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {member_id} is not the member chosen to compute the assignment.",
        )
    return group, member


def prepare_header(group: Any, choice: Any) -> dict[str, Any]:
    """The fields a PrepareAssignment response of any type starts with: the group, its epoch,
    the assignor and the version range every member supports."""
    lo, hi = choice.version_range or (-1, -1)
    return {
        "group_id": group.group_id,
        "group_epoch": group.group_epoch,
        "assignor_name": choice.name,
        "minimum_version": lo,
        "maximum_version": hi,
    }


def check_install_epoch(group: Any, group_epoch: int) -> None:
    """INVALID_ASSIGNMENT unless the assignment is newer than the installed one and not newer
    than the group (an older epoch's is installed anyway, and the member asked again)."""
    if not group.assignment_epoch < group_epoch <= group.group_epoch:
        raise CoordinatorError(
            Errors.INVALID_ASSIGNMENT,
            f"GroupEpoch {group_epoch} must be newer than the installed assignment "
            f"({group.assignment_epoch}) and at most the group epoch ({group.group_epoch}).",
        )
