"""The compacted state of a partition's log: the latest record per key, tombstones dropped.

This is what Kafka's log cleaner leaves of ``__consumer_offsets`` and what a snapshot holds.
Group records stay in the order of their latest write (an update moves a key to the end), as
compaction keeps offsets in order, so replaying a snapshot applies them in an order the live
partition once did. Offset commits are kept apart, each where its key was first written: a
commit's replay depends on nothing but its own key, so their order carries no meaning, and
not moving them saves a dictionary operation per commit, most of a log. A consumer group's
metadata tombstone deletes the whole consumer group, so it takes every record of that group's
state with it, even ones whose own tombstones were never written (offsets and rebalance
history stay: they outlive a protocol conversion); every group type whose state spans several
records does the same for its own record types (its row: ``GROUP_TOMBSTONE_SCOPE``).

Loading feeds it whole log batches (``add_batch``): one msgpack call per batch yields the
keys, and the dictionary work runs in C (``dict.update`` over zipped keys and records), so a
record that a later one overwrites costs a fraction of a microsecond and is never decoded.
"""

from __future__ import annotations

import itertools
import operator
from itertools import compress

from protocol.codec import key_identity, split_records_typed
from protocol.group_types import GROUP_TOMBSTONE_SCOPE
from protocol.records import OffsetCommitKey, Record

# A scoped record type (one a group's metadata tombstone takes with it) -> that metadata type.
_SCOPE_OF: dict[int, int] = {
    t: meta for meta, types in GROUP_TOMBSTONE_SCOPE.items() for t in types if t != meta
}
_OFFSET_COMMIT_TYPE = OffsetCommitKey.TYPE
_TYPE_OF = operator.itemgetter(0)  # a key identity's record type


class CompactedState:
    """The latest encoded record per key: offset commits, then group records in the order of
    their latest writes."""

    def __init__(self) -> None:
        # key identity (record type, key fields...) -> the latest encoded record
        self._latest: dict[tuple, bytes] = {}
        self._offsets: dict[tuple, bytes] = {}  # the same, for offset commits
        self._offset_bytes: int | None = 0  # None: not counted since a bulk add
        # (metadata record type, group id) -> identities of the group's other scoped records
        # held in _latest, so that a group's metadata tombstone finds them without a scan of
        # every key. Built by the first such tombstone (one scan), kept up to date from then
        # on; None until then, so a load of a log without group deletions never pays for it.
        self._scoped_keys: dict[tuple[int, str], set[tuple]] | None = None
        self._bytes = 0

    def add(self, record: Record, data: bytes) -> None:
        """A record the partition just wrote (and holds decoded)."""
        self._put(key_identity(record.key), data, record.value is None)

    def add_batch(self, batch: list[bytes]) -> None:
        """A batch read back from the log, as if each record were added in turn.

        Records in the legacy format are kept upgraded to the current one.
        """
        keys, blobs, batch, types = split_records_typed(batch)
        if _OFFSET_COMMIT_TYPE in types:
            if len(types) == 1:
                self._add_offsets(keys, blobs, batch)
                return
            is_offset = list(map(_OFFSET_COMMIT_TYPE.__eq__, map(_TYPE_OF, keys)))
            others = list(map(operator.not_, is_offset))
            self._add_offsets(*(list(compress(x, is_offset)) for x in (keys, blobs, batch)))
            keys, blobs, batch = (list(compress(x, others)) for x in (keys, blobs, batch))
        if None in blobs and any(
            blob is None and key[0] in GROUP_TOMBSTONE_SCOPE
            for key, blob in zip(keys, blobs, strict=True)
        ):  # a group deleted mid-batch: the cascade depends on what came before it
            for key, data, blob in zip(keys, batch, blobs, strict=True):
                self._put(key, data, blob is None)
            return
        last = dict(zip(keys, batch, strict=True))  # each key's last record in the batch
        order = keys
        if len(last) != len(keys):  # a key written twice: it lands where it was last written
            order = list(dict.fromkeys(reversed(keys)))
            order.reverse()
        latest = self._latest
        self._bytes -= sum(map(len, filter(None, map(latest.pop, order, itertools.repeat(None)))))
        if None in blobs:
            final = dict(zip(keys, blobs, strict=True))
            order = [key for key in order if final[key] is not None]
        records = list(map(last.__getitem__, order))
        latest.update(zip(order, records, strict=True))
        self._bytes += sum(map(len, records))
        if self._scoped_keys is not None:
            self._index_scoped(keys, latest)

    def records(self) -> list[bytes]:
        return [*self._offsets.values(), *self._latest.values()]

    @property
    def size_bytes(self) -> int:
        if self._offset_bytes is None:
            self._offset_bytes = sum(map(len, self._offsets.values()))
        return self._bytes + self._offset_bytes

    def __len__(self) -> int:
        return len(self._offsets) + len(self._latest)

    # -------------------------------------------------------------------------- internals

    def _add_offsets(self, keys: list[tuple], blobs: list, batch: list[bytes]) -> None:
        offsets = self._offsets
        offsets.update(zip(keys, batch, strict=True))
        if None in blobs:
            final = dict(zip(keys, blobs, strict=True))
            for key in [key for key, blob in final.items() if blob is None]:
                del offsets[key]
        self._offset_bytes = None

    def _put(self, identity: tuple, data: bytes, tombstone: bool) -> None:
        if identity[0] == _OFFSET_COMMIT_TYPE:
            self._put_offset(identity, data, tombstone)
            return
        old = self._latest.pop(identity, None)
        if old is not None:
            self._bytes -= len(old)
        scope = _SCOPE_OF.get(identity[0])
        if not tombstone:
            self._latest[identity] = data
            self._bytes += len(data)
            if scope is not None and self._scoped_keys is not None:
                self._scoped_keys.setdefault((scope, identity[1]), set()).add(identity)
            return
        if scope is not None:
            self._forget_scoped_key(scope, identity)
        elif identity[0] in GROUP_TOMBSTONE_SCOPE:
            self._delete_group(identity[0], identity[1])

    def _put_offset(self, identity: tuple, data: bytes, tombstone: bool) -> None:
        old = self._offsets.pop(identity, None) if tombstone else self._offsets.get(identity)
        if not tombstone:
            self._offsets[identity] = data
        if self._offset_bytes is not None:
            self._offset_bytes += (0 if tombstone else len(data)) - (len(old) if old else 0)

    def _delete_group(self, metadata_type: int, group_id: str) -> None:
        if self._scoped_keys is None:
            self._scoped_keys = {}
            for key in self._latest:
                scope = _SCOPE_OF.get(key[0])
                if scope is not None:
                    self._scoped_keys.setdefault((scope, key[1]), set()).add(key)
        doomed = self._scoped_keys.pop((metadata_type, group_id), ())
        for old in filter(None, map(self._latest.pop, doomed, itertools.repeat(None))):
            self._bytes -= len(old)

    def _forget_scoped_key(self, scope: int, identity: tuple) -> None:
        if self._scoped_keys is None:
            return
        keys = self._scoped_keys.get((scope, identity[1]))
        if keys is not None:
            keys.discard(identity)
            if not keys:
                del self._scoped_keys[(scope, identity[1])]

    def _index_scoped(self, keys: list[tuple], latest: dict[tuple, bytes]) -> None:
        assert self._scoped_keys is not None
        for key in keys:
            scope = _SCOPE_OF.get(key[0])
            if scope is not None:
                if key in latest:
                    self._scoped_keys.setdefault((scope, key[1]), set()).add(key)
                else:
                    self._forget_scoped_key(scope, key)
