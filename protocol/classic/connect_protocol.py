"""The bytes classic Kafka Connect workers put in JoinGroup and SyncGroup (protocol type "connect").

A classic Connect group is a classic group whose members are Connect workers: the coordinator
treats their metadata as opaque, the elected leader assigns connectors and tasks, and the
SyncGroup carries each worker's share. Online migration (classic Connect <-> the new
``connect`` group type) is where the coordinator must read these bytes, so they follow Kafka's
``ConnectProtocol`` and ``IncrementalCooperativeConnectProtocol`` byte for byte (big-endian;
``String`` = int16 length + UTF-8; ``Bytes`` = int32 length, -1 for null; arrays = int32
count, -1 for null)::

    JoinGroup metadata V0 ("default", eager):
        Version int16 | Url String | ConfigOffset int64
    JoinGroup metadata V1 ("compatible") / V2 ("sessioned", V1 + session keys):
        Version int16 | Url String | ConfigOffset int64 | Allocation nullable Bytes
        (Allocation = the worker's whole current assignment, serialized as below; null: none)
    SyncGroup assignment V0:
        Version int16 | Error int16 | Leader String | LeaderUrl String | ConfigOffset int64
        | Assignment [Connector String, Tasks [int32]]         (task -1 = the connector itself)
    SyncGroup assignment V1/V2: V0's fields, then
        | Revoked [Connector String, Tasks [int32]] | ScheduledDelay int32 (ms)
        (the arrays are nullable, and missing trailing fields read as null / 0, as in Kafka)

What a worker owns, for a converter (``owned_work``): an eager worker owns exactly its last
V0 assignment (it revokes everything before each join). An incremental worker's V1/V2
assignment is a *delta* (new work and revoked work): it owns the Allocation its JoinGroup
reported, minus what the SyncGroup assignment revoked, plus what it assigned. A coordinator
that writes a classic worker's assignment itself (after converting a group back to classic)
may put the worker's whole set in ``Assignment`` and what it must stop in ``Revoked``: the
delta rule reads that as the whole set, since adding what a worker already runs changes
nothing.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

PROTOCOL_TYPE = "connect"

# Kafka's connect.protocol settings and the JoinGroup protocol names they offer, by preference.
EAGER, COMPATIBLE, SESSIONED = "eager", "compatible", "sessioned"
PROTOCOL_NAME = {EAGER: "default", COMPATIBLE: "compatible", SESSIONED: "sessioned"}
VERSION_OF = {"default": 0, "compatible": 1, "sessioned": 2}
MODE_OF = {name: mode for mode, name in PROTOCOL_NAME.items()}
OFFERED = {
    EAGER: ("default",),
    COMPATIBLE: ("compatible", "default"),
    SESSIONED: ("sessioned", "compatible", "default"),
}

CONNECTOR_TASK = -1  # in a task list: the connector instance itself
NO_ERROR, CONFIG_MISMATCH = 0, 1  # assignment error codes (Kafka's Assignment.CONFIG_MISMATCH)

Task = tuple[str, int]

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
MAX_STRING_BYTES = 32_767


class ConnectProtocolError(ValueError):
    """The bytes are not Connect protocol metadata or assignment."""


@dataclass(frozen=True)
class Work:
    """Connectors and tasks, as sets: what a worker runs, is given or must stop."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[Task] = frozenset()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[Task] = ()) -> Work:
        return cls(frozenset(connectors), frozenset((c, int(t)) for c, t in tasks))

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def __or__(self, other: Work) -> Work:
        return Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __and__(self, other: Work) -> Work:
        return Work(self.connectors & other.connectors, self.tasks & other.tasks)


@dataclass(frozen=True)
class ConnectAssignment:
    """A SyncGroup assignment (V0: ``revoked`` empty and ``delay_ms`` 0)."""

    version: int = 1
    error: int = NO_ERROR
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    assigned: Work = field(default_factory=Work)
    revoked: Work = field(default_factory=Work)
    delay_ms: int = 0


@dataclass(frozen=True)
class WorkerState:
    """A JoinGroup metadata: the worker's URL, the config offset it has read and (V1+) what
    it runs (``None``: nothing, Kafka's null allocation)."""

    url: str
    config_offset: int
    allocation: ConnectAssignment | None = None


# -------------------------------------------------------------------------- encoding


def encode_metadata(state: WorkerState, version: int) -> bytes:
    _check_version(version)
    out = [_I16.pack(version), _string(state.url), _I64.pack(state.config_offset)]
    if version >= 1:
        alloc = state.allocation
        raw = None if alloc is None or not _nonempty(alloc) else encode_assignment(alloc)
        out.append(_bytes(raw))
    return b"".join(out)


def join_protocols(mode: str, state: WorkerState) -> list[tuple[str, bytes]]:
    """The JoinGroup protocols a worker in ``mode`` offers, most preferred first."""
    return [(name, encode_metadata(state, VERSION_OF[name])) for name in OFFERED[mode]]


def encode_assignment(a: ConnectAssignment) -> bytes:
    _check_version(a.version)
    out = [
        _I16.pack(a.version),
        _I16.pack(a.error),
        _string(a.leader),
        _string(a.leader_url),
        _I64.pack(a.config_offset),
        _work(a.assigned),
    ]
    if a.version >= 1:
        out += [_work(a.revoked), _I32.pack(a.delay_ms)]
    return b"".join(out)


def _nonempty(a: ConnectAssignment) -> bool:
    """Kafka writes a null allocation for the empty assignment."""
    return bool(a.assigned or a.revoked or a.leader or a.error or a.delay_ms)


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > MAX_STRING_BYTES:
        raise ValueError(f"string of {len(raw)} bytes is longer than {MAX_STRING_BYTES}")
    return _I16.pack(len(raw)) + raw


def _bytes(raw: bytes | None) -> bytes:
    return _I32.pack(-1) if raw is None else _I32.pack(len(raw)) + raw


def _work(work: Work) -> bytes:
    """Kafka's ``[Connector Assignment]``: per connector, -1 when the connector itself is in."""
    by_connector: dict[str, list[int]] = {c: [CONNECTOR_TASK] for c in work.connectors}
    for c, t in sorted(work.tasks):
        by_connector.setdefault(c, []).append(t)
    out = [_I32.pack(len(by_connector))]
    for c in sorted(by_connector):
        tasks = by_connector[c]
        out += [_string(c), _I32.pack(len(tasks)), b"".join(_I32.pack(t) for t in tasks)]
    return b"".join(out)


def _check_version(version: int) -> None:
    if version not in (0, 1, 2):
        raise ValueError(f"Connect protocol version {version} is not 0, 1 or 2")


# -------------------------------------------------------------------------- decoding


class _Reader:
    def __init__(self, data: object) -> None:
        if not isinstance(data, (bytes, bytearray)):
            raise ConnectProtocolError(f"expected bytes, got {type(data).__name__}")
        self.data, self.pos = bytes(data), 0

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ConnectProtocolError("truncated Connect protocol bytes")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, layout: struct.Struct) -> int:
        return layout.unpack(self.take(layout.size))[0]

    def string(self) -> str:
        size = self.unpack(_I16)
        if size < 0:
            raise ConnectProtocolError("a null string where Connect requires one")
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError:
            raise ConnectProtocolError("a string that is not UTF-8") from None

    def nullable_bytes(self) -> bytes | None:
        size = self.unpack(_I32)
        return None if size == -1 else self.take(size)

    def work(self, nullable: bool) -> Work:
        count = self.unpack(_I32)
        if count == -1 and nullable:
            return Work()
        if count < 0:
            raise ConnectProtocolError(f"array length {count}")
        connectors: set[str] = set()
        tasks: set[Task] = set()
        for _ in range(count):
            name = self.string()
            n = self.unpack(_I32)
            if n < 0:
                raise ConnectProtocolError(f"task array length {n}")
            for _ in range(n):
                t = self.unpack(_I32)
                if t == CONNECTOR_TASK:
                    connectors.add(name)
                elif t >= 0:
                    tasks.add((name, t))
                else:
                    raise ConnectProtocolError(f"task id {t} of connector {name!r}")
        return Work(frozenset(connectors), frozenset(tasks))


def decode_metadata(data: bytes) -> tuple[int, WorkerState]:
    """``(version, state)``; a version above 2 is read as V1/V2 (Kafka's forward rule)."""
    r = _Reader(data)
    version = r.unpack(_I16)
    if version < 0:
        raise ConnectProtocolError(f"unsupported Connect metadata version {version}")
    url, offset = r.string(), r.unpack(_I64)
    allocation = None
    if version >= 1 and not r.at_end():
        raw = r.nullable_bytes()
        allocation = decode_assignment(raw) if raw is not None else None
    return version, WorkerState(url, offset, allocation)


def decode_assignment(data: bytes) -> ConnectAssignment:
    """An empty byte string is the empty assignment (a member the leader left out)."""
    if data == b"":
        return ConnectAssignment(version=0)
    r = _Reader(data)
    version = r.unpack(_I16)
    if version < 0:
        raise ConnectProtocolError(f"unsupported Connect assignment version {version}")
    error, leader, leader_url = r.unpack(_I16), r.string(), r.string()
    offset = r.unpack(_I64)
    if version == 0:
        return ConnectAssignment(0, error, leader, leader_url, offset, r.work(nullable=False))
    # V1 tolerates missing trailing fields (Kafka's TOLERATE_MISSING_FIELDS_WITH_DEFAULTS).
    assigned = r.work(nullable=True) if not r.at_end() else Work()
    revoked = r.work(nullable=True) if not r.at_end() else Work()
    delay_ms = r.unpack(_I32) if not r.at_end() else 0
    return ConnectAssignment(
        version, error, leader, leader_url, offset, assigned, revoked, delay_ms
    )


def revoking_work(metadata: bytes, assignment: bytes | None) -> Work:
    """What a classic worker's latest assignment takes from what it reported running at its
    JoinGroup (V1/V2): it may run it still, until its SyncGroup reply reaches it. Raises
    ``ConnectProtocolError`` on bytes that are neither."""
    version, state = decode_metadata(metadata)
    delta = decode_assignment(assignment) if assignment else None
    if version == 0 or delta is None or delta.version == 0 or state.allocation is None:
        return Work()
    before = state.allocation.assigned
    return before & delta.revoked


def owned_work(metadata: bytes, assignment: bytes | None) -> Work:
    """What a classic worker runs, from its JoinGroup metadata and (once synced) its SyncGroup
    assignment: eager V0, its assignment; V1/V2, allocation - revoked + assigned (see the
    module docstring). Raises ``ConnectProtocolError`` on bytes that are neither."""
    version, state = decode_metadata(metadata)
    delta = decode_assignment(assignment) if assignment else None
    if version == 0:
        return delta.assigned if delta is not None else Work()
    before = state.allocation.assigned if state.allocation is not None else Work()
    if delta is None:
        return before
    if delta.version == 0:
        return delta.assigned
    return (before - delta.revoked) | delta.assigned
