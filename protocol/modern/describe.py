"""Describe requests of modern groups: each named group, or an entry saying why it is not one
of the type asked for (GROUP_ID_NOT_FOUND, state ``dead``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.errors import Errors
from protocol.validation import check_types

if TYPE_CHECKING:
    from protocol.context import ShardContext


def describe_each(
    ctx: ShardContext, req: Any, group_type: str, describe: Callable[[Any], Any], missing: type
) -> list:
    """``describe(group)`` for each group ``req`` names (``group_ids``) of ``group_type``; a
    ``missing`` entry for the others. The request's types are checked first."""
    check_types(req)
    out = []
    for group_id in req.group_ids:
        group = ctx.groups.get(group_id)
        if group is None or group.group_type != group_type:
            kind = f"is not a {group_type} group" if group is not None else "not found"
            out.append(
                missing(
                    error_code=Errors.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} {kind}.",
                    group_id=group_id,
                    group_state="dead",
                )
            )
        else:
            out.append(describe(group))
    return out
