"""What a share group answers to the requests of other group types, as Kafka 4.2 does.

A group id belongs to the type of its first member. To a share group: OffsetCommit,
OffsetFetch and OffsetDelete are GROUP_ID_NOT_FOUND (``ShareGroup.validateOffset*``: "not a
consumer group"; a share group's progress is its share-partitions' start offsets); a classic
JoinGroup is INCONSISTENT_GROUP_PROTOCOL, SyncGroup / Heartbeat / LeaveGroup are
UNKNOWN_MEMBER_ID (Kafka's ``testClassicGroup*OnShareGroup``); a consumer or Connect heartbeat
is GROUP_ID_NOT_FOUND (their rules refuse any other type's id).
"""

from __future__ import annotations

from typing import Any, NoReturn

from protocol.errors import CoordinatorError, Errors


def refuse_offsets(group: Any, _req: Any = None) -> NoReturn:
    raise CoordinatorError(
        Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is not a consumer group."
    )


class ClassicRequestsRefused:
    """The classic host of a share group: every classic request refused, changing nothing."""

    def join(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.INCONSISTENT_GROUP_PROTOCOL,
            f"Group {group.group_id} is a share group: it takes no classic members.",
        )

    def _unknown(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {getattr(req, 'member_id', '')} is not a classic member of share group "
            f"{group.group_id}.",
        )

    sync = heartbeat = leave = _unknown
