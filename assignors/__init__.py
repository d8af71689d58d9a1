"""Server-side assignors (``uniform``, ``range``), their spec types and a registry.

The bottom floor of Cohort: imports only the standard library and numpy. The coordinator
adapts its group state into an :class:`AssignmentSpec` and asks an assignor from
:data:`SERVER_ASSIGNORS` for the new target assignment. Client-side assignors live in
:mod:`assignors.client` (interfaces, the version-range rule, a sticky consumer assignor),
Connect's incremental cooperative assignor in :mod:`assignors.connect`, the classic
leader's strategies in :mod:`assignors.classic`.
"""

from assignors.server.range import RangeAssignor
from assignors.server.uniform import UniformAssignor
from assignors.spec import (
    Assignment,
    AssignmentSpec,
    GroupAssignment,
    MemberSpec,
    PartitionAssignor,
    PartitionAssignorError,
    TopicSpec,
)

# Name -> assignor, as ``group.consumer.assignors`` lists them; the first is the default.
SERVER_ASSIGNORS: dict[str, PartitionAssignor] = {
    UniformAssignor.name: UniformAssignor(),
    RangeAssignor.name: RangeAssignor(),
}


def server_assignor(name: str) -> PartitionAssignor:
    """The server assignor called ``name``; ``KeyError`` if the server has none by that name."""
    try:
        return SERVER_ASSIGNORS[name]
    except KeyError:
        raise KeyError(f"unknown server assignor {name!r}") from None


__all__ = [
    "SERVER_ASSIGNORS",
    "Assignment",
    "AssignmentSpec",
    "GroupAssignment",
    "MemberSpec",
    "PartitionAssignor",
    "PartitionAssignorError",
    "RangeAssignor",
    "TopicSpec",
    "UniformAssignor",
    "server_assignor",
]
