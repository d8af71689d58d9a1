"""The compacted state of a partition's log: the latest record per key, tombstones dropped.

This is what Kafka's log cleaner leaves of ``__consumer_offsets`` and what a snapshot holds.
Entries stay in the order of their latest write (an update moves a key to the end), as
compaction keeps offsets in order, so replaying a snapshot applies records in an order the
live partition once did. A consumer (or Connect) group's metadata tombstone deletes the whole
group, so it takes every record of that group's state with it, even ones whose own tombstones
were never written (offsets and rebalance history stay: they outlive a protocol conversion).
"""

from __future__ import annotations

from protocol.codec import key_identity, peek_key
from protocol.records import GROUP_TOMBSTONE_SCOPE, Record


class CompactedState:
    def __init__(self) -> None:
        # key identity (record type, key fields...) -> the latest encoded record
        self._latest: dict[tuple, bytes] = {}
        self._bytes = 0

    def add(self, record: Record, data: bytes) -> None:
        """A record the partition just wrote (and holds decoded)."""
        self._put(key_identity(record.key), data, record.value is None)

    def add_encoded(self, data: bytes) -> None:
        """A record read back from the log: compacted before it is decoded, so a load only
        builds the records that survive."""
        identity, tombstone = peek_key(data)
        self._put(identity, data, tombstone)

    def _put(self, identity: tuple, data: bytes, tombstone: bool) -> None:
        old = self._latest.pop(identity, None)
        if old is not None:
            self._bytes -= len(old)
        if not tombstone:
            self._latest[identity] = data
            self._bytes += len(data)
        elif identity[0] in GROUP_TOMBSTONE_SCOPE:
            scope = GROUP_TOMBSTONE_SCOPE[identity[0]]
            group_id = identity[1]  # every key's first field is its group id
            doomed = [k for k in self._latest if k[1] == group_id and k[0] in scope]
            for k in doomed:
                self._bytes -= len(self._latest.pop(k))

    def records(self) -> list[bytes]:
        return list(self._latest.values())

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._latest)
