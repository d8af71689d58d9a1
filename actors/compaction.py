"""The compacted state of a partition's log: the latest record per key, tombstones dropped.

This is what Kafka's log cleaner leaves of ``__consumer_offsets`` and what a snapshot holds.
Entries stay in the order of their latest write (an update moves a key to the end), as
compaction keeps offsets in order, so replaying a snapshot applies records in an order the
live partition once did. A group's metadata tombstone deletes the whole group, so it takes
every record of that group with it, even ones whose own tombstones were never written.
"""

from __future__ import annotations

from protocol.records import ConsumerGroupMetadataKey, Record


class CompactedState:
    def __init__(self) -> None:
        self._latest: dict[object, bytes] = {}
        self._bytes = 0

    def add(self, record: Record, data: bytes) -> None:
        key = record.key
        old = self._latest.pop(key, None)
        if old is not None:
            self._bytes -= len(old)
        if record.value is not None:
            self._latest[key] = data
            self._bytes += len(data)
        elif isinstance(key, ConsumerGroupMetadataKey):
            gone = [k for k in self._latest if getattr(k, "group_id", None) == key.group_id]
            for k in gone:
                self._bytes -= len(self._latest.pop(k))

    def records(self) -> list[bytes]:
        return list(self._latest.values())

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._latest)
