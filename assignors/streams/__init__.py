"""Streams groups' task assignors (KIP-1071): ``sticky``, the one Kafka ships.

The coordinator adapts a streams group into a :class:`GroupSpec` plus a
:class:`TopologyDescriber` and asks an assignor from :data:`ASSIGNORS` for the target
assignment: active, standby (and, from the refiner, warm-up) tasks per member.
"""

from assignors.streams.spec import (
    NUM_STANDBY_REPLICAS,
    AssignmentMemberSpec,
    GroupAssignment,
    GroupSpec,
    MemberAssignment,
    TaskAssignorError,
    TaskId,
    TopologyDescriber,
)
from assignors.streams.sticky import StickyTaskAssignor

# Name -> assignor, as ``group.streams.assignors`` lists them; the first is the default.
ASSIGNORS: dict[str, StickyTaskAssignor] = {StickyTaskAssignor.name: StickyTaskAssignor()}

__all__ = [
    "ASSIGNORS",
    "NUM_STANDBY_REPLICAS",
    "AssignmentMemberSpec",
    "GroupAssignment",
    "GroupSpec",
    "MemberAssignment",
    "StickyTaskAssignor",
    "TaskAssignorError",
    "TaskId",
    "TopologyDescriber",
]
