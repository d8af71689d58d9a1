"""``StickyPartitionAssignor``: a consumer's client-side assignor, balanced and sticky.

The KIP-848 way to run a custom strategy on the client: the coordinator picks a member by
version range, hands it the group (members, subscriptions, the partitions each one's target
holds now) and installs what it returns. This one is the strategy most users want:

* **Balanced.** Members with the same subscription differ by at most one partition; with
  different subscriptions no partition can pass, directly or along a chain of members, to a
  member holding two or more fewer.
* **Sticky.** A partition stays with its member unless balance needs it elsewhere, so a
  leaver's partitions spread without moving anyone else's and a joiner takes about ``1/n``.
* **Deterministic.** The same group gives the same answer, whatever order it comes in.

The algorithm is the one the classic ``cooperative-sticky`` leader runs
(:func:`assignors.classic.sticky_assignment`), fed topic ids for names. The cooperative
half (withholding moved partitions until their owner revokes them) is not needed here: the
coordinator's reconciler does that for every target it installs.

Metadata: this assignor needs nothing beyond the owned partitions the coordinator already
sends, so its metadata is empty at every version. It still speaks a version range (default
``[0, 0]``) so that the version-range rule picks who runs it, and so that a later version
can add data without breaking members that speak only the older ones.
"""

from __future__ import annotations

from assignors.classic import ClassicSubscription, sticky_assignment
from assignors.client.interfaces import (
    Assignment,
    AssignorMetadata,
    MemberAssignment,
    PartitionAssignor,
    PartitionGroup,
    PartitionMemberAssignment,
)
from assignors.client.version_range import write_version

NAME = "sticky"
MIN_VERSION = 0
MAX_VERSION = 0


class StickyPartitionAssignor(PartitionAssignor):
    """Balanced, sticky, deterministic partition assignment for KIP-848 client-side use."""

    def __init__(self, *, minimum_version: int = MIN_VERSION, maximum_version: int = MAX_VERSION):
        if not 0 <= minimum_version <= maximum_version:
            raise ValueError("versions must satisfy 0 <= minimum <= maximum")
        self._versions = (minimum_version, maximum_version)
        self.last_assignment: MemberAssignment | None = None

    def name(self) -> str:
        return NAME

    def minimum_version(self) -> int:
        return self._versions[0]

    def maximum_version(self) -> int:
        return self._versions[1]

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(reason=0, version=self._versions[1])

    def assign(self, group: PartitionGroup) -> Assignment:  # type: ignore[override]
        """Every member's target: all partitions of the topics it subscribes to, once."""
        sizes = {t.topic_id: t.num_partitions for t in group.topics}
        subscriptions = {
            m.member_id: ClassicSubscription(
                topics=sorted(m.subscribed_topic_ids),
                owned_partitions=sorted(m.owned_partitions),
                generation_id=0,
                group_instance_id=m.instance_id,
            )
            for m in group.members
        }
        target = sticky_assignment(sizes, subscriptions)
        return Assignment(
            error=0,
            members=tuple(
                PartitionMemberAssignment(
                    member_id=m.member_id,
                    version=write_version(self._versions, m.readable_version()),
                    partitions=frozenset(target[m.member_id]),
                )
                for m in sorted(group.members, key=lambda m: m.member_id)
            ),
        )

    def on_assignment(self, assignment: MemberAssignment) -> None:
        """Nothing to remember but the assignment itself (kept for the member's view)."""
        self.last_assignment = assignment
