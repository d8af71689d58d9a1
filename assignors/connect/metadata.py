"""The connect assignor's memory between rounds, as versioned bytes in member metadata.

Kafka's Connect leader keeps the previous assignment, the held (lost) work and the
revocation backoff in its own memory, and loses them whenever leadership moves. Cohort's
assignor is a pure function run by whichever worker the coordinator picks, so what it must
remember travels in the per-member assignment metadata the coordinator stores and hands
back (seed 004: ``metadata_version`` / ``metadata_bytes``).

Every member's metadata carries a header with the time it should ask for the next rebalance
(:func:`remaining_delay_ms`). A few members (the *carriers*) also carry the group state
(:class:`GroupState`): copying it to every member would cost ``members x units`` bytes
(hundreds of MB for 1,000 workers and 100,000 tasks), while a copy on a few members
survives any of them leaving. Copies are ordered by ``stamp``: the assignor reads the
newest copy it can decode.

Format (big-endian ``struct``; msgpack would do, but this floor imports only the stdlib
and numpy)::

    header   u8 flags (bit 0: group state follows)   i64 next_rebalance_ms (-1: none)
    state    i64 stamp   u16 revoking_rounds   i64 last_revoke_ms
             u32 n, n x worker key        v1: str member_id
                                          v2: str member_id, nullable str instance_id
             u32 c, c x str connector, c x u32 task count, c x i32 connector owner
             sum(task counts) x i32 task owner   (owners index the keys, -1: none)
             u32 h, h x hold: u32 key index, i64 lost_at_ms,
                              u32 k, k x u32 connector index,
                              u32 t, t x (u32 connector index, u32 task)
    str      u32 byte length (0xFFFFFFFF: null) + UTF-8

Versions: 1 keys workers by member id only (what Kafka can do); 2 adds the instance id, so
a static worker that comes back under a new member id is recognised. Decoding reads every
version in the caller's range; a copy at another version is not readable to it, and is
skipped, never fatal.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

MIN_VERSION = 1
MAX_VERSION = 2

NO_TIME = -1  # "not scheduled" / "never" in every *_ms field
_HAS_STATE = 0x01
_NULL = 0xFFFFFFFF
_HEADER = struct.Struct(">Bq")
_STATE_HEAD = struct.Struct(">qHq")
_U32 = struct.Struct(">I")
_HOLD_HEAD = struct.Struct(">Iq")
_OWNERS = np.dtype(">i4")
_INDICES = np.dtype(">u4")


class MetadataError(ValueError):
    """The bytes are not connect assignor metadata at the stated version."""


@dataclass(frozen=True)
class WorkerKey:
    """Who a worker is across rounds: its member id and, when static, its instance id.

    A present worker is the same worker when both carry an instance id and the instance ids
    match; otherwise when the member ids match.
    """

    member_id: str
    instance_id: str | None = None

    def matches(self, member_id: str, instance_id: str | None) -> bool:
        if self.instance_id is not None and instance_id is not None:
            return self.instance_id == instance_id
        return self.member_id == member_id


@dataclass(frozen=True)
class HeldWork:
    """Work of a departed worker, running nowhere until it returns or the delay expires."""

    owner: WorkerKey
    lost_at_ms: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class StormGuard:
    """Revoking rounds of the current burst, and when the last one revoked (see storm.py)."""

    revoking_rounds: int = 0
    last_revoke_ms: int = NO_TIME


@dataclass(frozen=True, eq=False)
class GroupState:
    """What the assignor remembers: the previous target, held work, the storm guard.

    ``connectors`` is the previous round's configuration (name, task count), sorted by
    name; ``connector_owners[i]`` and the slice of ``task_owners`` for connector ``i``
    (connectors' tasks concatenated in order) index ``roster``, -1 for nobody. ``stamp``
    grows whenever the content changes, so the newest copy wins.
    """

    stamp: int
    roster: tuple[WorkerKey, ...] = ()
    connectors: tuple[tuple[str, int], ...] = ()
    connector_owners: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    task_owners: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    held: tuple[HeldWork, ...] = ()
    storm: StormGuard = StormGuard()

    def same_content(self, other: GroupState | None) -> bool:
        """Equal except for ``stamp``: an unchanged state keeps its stamp (and its bytes)."""
        return (
            other is not None
            and self.roster == other.roster
            and self.connectors == other.connectors
            and np.array_equal(self.connector_owners, other.connector_owners)
            and np.array_equal(self.task_owners, other.task_owners)
            and self.held == other.held
            and self.storm == other.storm
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GroupState)
            and self.stamp == other.stamp
            and (self.same_content(other))
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class WorkerMetadata:
    """One member's metadata: when to ask for a rebalance, and maybe the group state."""

    next_rebalance_ms: int = NO_TIME
    state: GroupState | None = None


# -- encoding ------------------------------------------------------------------------------


def encode(metadata: WorkerMetadata, version: int) -> bytes:
    """``metadata`` as bytes at ``version`` (v1 drops instance ids)."""
    _check_version(version, (MIN_VERSION, MAX_VERSION))
    flags = _HAS_STATE if metadata.state is not None else 0
    parts = [_HEADER.pack(flags, metadata.next_rebalance_ms)]
    if metadata.state is not None:
        parts.extend(_encode_state(metadata.state, version))
    return b"".join(parts)


def _encode_state(state: GroupState, version: int) -> list[bytes]:
    counts = np.array([n for _, n in state.connectors], dtype=np.int64)
    if len(state.connector_owners) != len(counts) or len(state.task_owners) != counts.sum():
        raise ValueError("owners must match the connectors table")
    parts = [
        _STATE_HEAD.pack(
            state.stamp, min(state.storm.revoking_rounds, 0xFFFF), state.storm.last_revoke_ms
        ),
        _U32.pack(len(state.roster)),
    ]
    for key in state.roster:
        parts.append(_str(key.member_id))
        if version >= 2:
            parts.append(_str(key.instance_id))
    parts.append(_U32.pack(len(state.connectors)))
    parts.extend(_str(name) for name, _ in state.connectors)
    parts.append(counts.astype(_INDICES).tobytes())
    parts.append(np.asarray(state.connector_owners).astype(_OWNERS).tobytes())
    parts.append(np.asarray(state.task_owners).astype(_OWNERS).tobytes())
    parts.extend(_encode_holds(state))
    return parts


def _encode_holds(state: GroupState) -> list[bytes]:
    key_index = {key: i for i, key in reversed(list(enumerate(state.roster)))}
    connector_index = {name: i for i, (name, _) in enumerate(state.connectors)}
    parts = [_U32.pack(len(state.held))]
    for hold in state.held:
        if hold.owner not in key_index:
            raise ValueError(f"held work of {hold.owner} whose key is not in the roster")
        parts.append(_HOLD_HEAD.pack(key_index[hold.owner], hold.lost_at_ms))
        connectors = [connector_index[c] for c in hold.connectors]
        parts.append(_U32.pack(len(connectors)))
        parts.append(np.array(connectors, dtype=_INDICES).tobytes())
        pairs = [(connector_index[c], t) for c, t in hold.tasks]
        parts.append(_U32.pack(len(pairs)))
        parts.append(np.array(pairs, dtype=_INDICES).reshape(-1).tobytes())
    return parts


def _str(value: str | None) -> bytes:
    if value is None:
        return _U32.pack(_NULL)
    raw = value.encode("utf-8")
    return _U32.pack(len(raw)) + raw


# -- decoding ------------------------------------------------------------------------------


def decode(
    data: bytes, version: int, readable: tuple[int, int] = (MIN_VERSION, MAX_VERSION)
) -> WorkerMetadata:
    """The metadata in ``data``, written at ``version``; ``MetadataError`` if unreadable.

    Empty bytes are a member that was never served: no schedule, no state, at any version.
    ``readable`` is the decoding assignor's own range: a version outside it is an error
    even when this module knows the format, so an assignor configured for ``[1, 1]``
    behaves like one that never heard of version 2.
    """
    if not data:
        return WorkerMetadata()
    _check_version(version, readable)
    _check_version(version, (MIN_VERSION, MAX_VERSION))
    reader = _Reader(data)
    flags, next_rebalance_ms = reader.unpack(_HEADER)
    state = _decode_state(reader, version) if flags & _HAS_STATE else None
    if not reader.done():
        raise MetadataError(f"{len(data) - reader.pos} bytes left over")
    return WorkerMetadata(next_rebalance_ms, state)


def _decode_state(reader: _Reader, version: int) -> GroupState:
    stamp, revoking_rounds, last_revoke_ms = reader.unpack(_STATE_HEAD)
    roster = []
    for _ in range(reader.u32()):
        member_id = reader.text()
        instance_id = reader.text() if version >= 2 else None
        if member_id is None:
            raise MetadataError("a worker key without a member id")
        roster.append(WorkerKey(member_id, instance_id))
    num_connectors = reader.u32()
    names = [reader.text() for _ in range(num_connectors)]
    if any(name is None for name in names):
        raise MetadataError("a connector without a name")
    counts = reader.array(_INDICES, num_connectors).astype(np.int64)
    connector_owners = reader.array(_OWNERS, num_connectors).astype(np.int32)
    task_owners = reader.array(_OWNERS, int(counts.sum())).astype(np.int32)
    for owners in (connector_owners, task_owners):
        if owners.size and (owners.min() < -1 or owners.max() >= len(roster)):
            raise MetadataError("an owner outside the roster")
    connectors = tuple(zip(names, counts.tolist(), strict=True))
    held = tuple(_decode_hold(reader, roster, connectors) for _ in range(reader.u32()))
    return GroupState(
        stamp=stamp,
        roster=tuple(roster),
        connectors=connectors,  # type: ignore[arg-type]
        connector_owners=connector_owners,
        task_owners=task_owners,
        held=held,
        storm=StormGuard(revoking_rounds, last_revoke_ms),
    )


def _decode_hold(
    reader: _Reader, roster: list[WorkerKey], connectors: tuple[tuple[str, int], ...]
) -> HeldWork:
    key_index, lost_at_ms = reader.unpack(_HOLD_HEAD)
    if key_index >= len(roster):
        raise MetadataError("held work of a worker outside the roster")
    connector_ids = reader.array(_INDICES, reader.u32())
    pairs = reader.array(_INDICES, 2 * reader.u32()).reshape(-1, 2)
    if connector_ids.size and connector_ids.max() >= len(connectors):
        raise MetadataError("held connector outside the connectors table")
    if pairs.size and pairs[:, 0].max() >= len(connectors):
        raise MetadataError("held task outside the connectors table")
    return HeldWork(
        owner=roster[key_index],
        lost_at_ms=lost_at_ms,
        connectors=tuple(connectors[i][0] for i in connector_ids.tolist()),
        tasks=tuple((connectors[c][0], t) for c, t in pairs.tolist()),
    )


class _Reader:
    """A cursor over bytes that turns every shortfall into :class:`MetadataError`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def done(self) -> bool:
        return self.pos == len(self.data)

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise MetadataError("metadata is truncated")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, layout: struct.Struct) -> tuple:
        return layout.unpack(self.take(layout.size))

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def text(self) -> str | None:
        size = self.u32()
        if size == _NULL:
            return None
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError as e:
            raise MetadataError(f"a string that is not UTF-8: {e}") from None

    def array(self, dtype: np.dtype, count: int) -> np.ndarray:
        return np.frombuffer(self.take(count * dtype.itemsize), dtype=dtype)


def _check_version(version: int, readable: tuple[int, int]) -> None:
    if not readable[0] <= version <= readable[1]:
        raise MetadataError(f"version {version} is outside [{readable[0]}, {readable[1]}]")


# -- what a worker asks ----------------------------------------------------------------------


def remaining_delay_ms(data: bytes, version: int, now_ms: int) -> int | None:
    """How long the worker holding this metadata waits before asking for a rebalance.

    ``None``: nothing is scheduled. ``0``: ask now (set the assignor ``reason``). Only the
    header is read, so this is cheap and works for every member, carrier or not; metadata
    the worker cannot read schedules nothing.
    """
    if not data:
        return None
    try:
        _check_version(version, (MIN_VERSION, MAX_VERSION))
        (_, next_rebalance_ms) = _HEADER.unpack_from(data)
    except (MetadataError, struct.error):
        return None
    if next_rebalance_ms == NO_TIME:
        return None
    return max(0, next_rebalance_ms - now_ms)
