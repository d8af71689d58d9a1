"""Writing a target assignment: one record per member whose target changed, then the epoch.

Whoever computed it (the coordinator's assignor, or a member through InstallAssignment), a
target is installed as a unit: a reader of the log sees the members' targets, then the target
epoch record that makes them current. Kafka's ``TargetAssignmentBuilder`` ends the same way.
"""

from __future__ import annotations

from typing import Any

from protocol.records import Record

# member id -> its target record value; members in sorted order, as every builder makes them.
Targets = dict[str, Any]


def target_records(group: Any, targets: Targets, epoch: int) -> list[Record]:
    """The records that install ``targets`` at ``epoch`` in ``group`` (a ``ModernGroup``):
    a member's target only when it changed (an identical value is a quick skip)."""
    gid, kinds, current = group.group_id, group.RECORDS, group.target
    member_key = kinds.target
    records = []
    for mid, value in targets.items():
        old = current.get(mid)
        if old is not value and old != value:
            records.append(Record(member_key(gid, mid), value))
    records.append(Record(kinds.target_epoch(gid), kinds.target_epoch_value(epoch)))
    return records
