"""One round of the incremental cooperative connect assignor, as a pure function.

:func:`plan_round` takes the group (members with their current targets and metadata, the
configured connectors, the time) and returns every member's new target plus the metadata
that carries the assignor's memory to the next round. Steps, in order:

1. **Current owners.** Each member's target, minus deleted work (no longer configured) and
   duplicates (a unit in two targets stays with the smaller member id). Kafka revokes both
   first; here they simply leave the targets that should not have them.
2. **Lost work** (:mod:`holds`): given back to its returning owner, held for a departed
   one, or released when its delay is over.
3. **Balance** (:mod:`balance`): connectors and tasks separately; tasks spread per
   connector. Moving work from one worker to another is allowed unless work is held (as in
   Kafka: a departed worker may return) or the storm guard (:mod:`storm`) says wait. Free
   work is handed out either way.
4. **Memory.** The new target as the previous-owner map, the holds and the storm guard go
   into :class:`GroupState`, written to a few carriers; every member learns when to ask
   for the next rebalance.

**Final targets, not Kafka's two steps.** Kafka's assignor never hands revoked work to its
new owner in the same round: the old owner must stop it and rejoin first. Cohort's
coordinator already enforces that for every target it installs (seed 004: a member gets a
unit only once its previous owner acknowledged the revocation), so this assignor returns
the final target. It converges in one assignor round instead of two, the second
COMPUTE_ASSIGNMENT round disappears, and the output is a fixed point: rerun on its own
output, it moves nothing and writes the same bytes, so echoing metadata never starts
another rebalance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from assignors.client.interfaces import ConnectGroup, ConnectGroupMember, ConnectMemberAssignment
from assignors.client.version_range import VersionRange, write_version
from assignors.connect import balance
from assignors.connect.holds import LostWork, resolve_lost_work
from assignors.connect.layout import HELD, UNASSIGNED, WorkLayout, owners_by_worker
from assignors.connect.metadata import (
    NO_TIME,
    GroupState,
    HeldWork,
    MetadataError,
    StormGuard,
    WorkerKey,
    WorkerMetadata,
    decode,
    encode,
)
from assignors.connect.storm import decide

HELD_WORK_PENDING = "held work pending"
STORM_GUARD = "storm guard"


@dataclass(frozen=True)
class ConnectRound:
    """What one round decided: the members' assignments and why it did what it did.

    ``members`` is what InstallAssignment needs (sorted by member id). ``moved_units``
    counts connectors and tasks taken from one present worker's target to be run by
    another (the load-balancing revocations); ``dropped_units`` the deleted and duplicated
    ones removed from targets. ``moves_skipped`` says why balance needed moves it did not
    make (:data:`HELD_WORK_PENDING`, :data:`STORM_GUARD`), ``None`` otherwise.
    """

    members: tuple[ConnectMemberAssignment, ...]
    held: tuple[HeldWork, ...]
    next_rebalance_ms: int
    state: GroupState
    moved_units: int
    dropped_units: int
    reclaimed_units: int
    released_units: int
    moves_skipped: str | None


def plan_round(
    group: ConnectGroup,
    *,
    max_delay_ms: int,
    versions: VersionRange,
    state_copies: int,
) -> ConnectRound:
    """The new assignment of ``group`` at ``group.now_ms`` (see the module docstring)."""
    if group.now_ms is None:
        raise ValueError("the connect assignor needs ConnectGroup.now_ms")
    now_ms = group.now_ms
    members = sorted(group.members, key=lambda m: m.member_id)
    if len({m.member_id for m in members}) != len(members):
        raise ValueError("member ids must be unique")
    layout = WorkLayout(group.connectors)
    owner, dropped = _current_owner(layout, members)
    found = freshest_state(members, versions)
    previous = found[0] if found is not None else None
    lost = resolve_lost_work(layout, owner, members, previous, now_ms, max_delay_ms)
    guard = previous.storm if previous is not None else StormGuard()
    owner, moved, skipped, guard, retry_at_ms = _balance(
        layout, lost, len(members), guard, now_ms, max_delay_ms
    )
    next_rebalance_ms = _earliest(lost.next_deadline_ms(max_delay_ms), retry_at_ms)
    labels = layout.labels()
    state = _next_state(layout, members, owner, lost, guard, labels, found, now_ms)
    assignments = _member_assignments(
        layout, members, owner, labels, state, next_rebalance_ms, versions, state_copies
    )
    return ConnectRound(
        members=assignments,
        held=state.held,
        next_rebalance_ms=next_rebalance_ms,
        state=state,
        moved_units=moved,
        dropped_units=dropped,
        reclaimed_units=lost.reclaimed_units,
        released_units=lost.released_units,
        moves_skipped=skipped,
    )


# -- step 1: current owners ------------------------------------------------------------------


def _current_owner(
    layout: WorkLayout, members: Sequence[ConnectGroupMember]
) -> tuple[np.ndarray, int]:
    """Owner per unit from the members' targets, and how many claims were dropped."""
    owner = np.full(layout.num_units, UNASSIGNED, dtype=np.int64)
    dropped = 0
    for w, member in enumerate(members):
        units = np.array(
            layout.units_of(member.owned_connectors, member.owned_tasks), dtype=np.int64
        )
        free = owner[units] == UNASSIGNED
        owner[units[free]] = w
        dropped += len(member.owned_connectors) + len(member.owned_tasks) - int(free.sum())
    return owner, dropped


def freshest_state(
    members: Sequence[ConnectGroupMember], versions: VersionRange
) -> tuple[GroupState, int] | None:
    """The newest group state among the members' metadata this assignor can read.

    Returns the state and the version it was read at. Newest is the highest stamp; on a tie
    the higher version (it knows more, e.g. instance ids). Metadata at versions outside
    ``versions``, or not decodable, is skipped: a bad copy costs memory, never the round.
    """
    best: tuple[GroupState, int] | None = None
    for member in members:
        try:
            state = decode(member.metadata, member.version, versions).state
        except MetadataError:
            continue
        if state is None:
            continue
        if best is None or (state.stamp, member.version) > (best[0].stamp, best[1]):
            best = (state, member.version)
    return best


# -- step 3: balance -------------------------------------------------------------------------


def _balance(
    layout: WorkLayout,
    lost: LostWork,
    num_workers: int,
    guard: StormGuard,
    now_ms: int,
    max_delay_ms: int,
) -> tuple[np.ndarray, int, str | None, StormGuard, int]:
    """(owner, moved units, why moves were skipped, storm guard, retry time)."""
    owner = lost.owner.copy()
    if num_workers == 0:
        return owner, 0, None, guard, NO_TIME
    kinds = [
        (layout.connector_units, layout.connector_groups(), 1),
        (layout.task_units, layout.task_groups(), layout.num_connectors),
    ]
    # Ties between workers go to the one running less work of any kind.
    load = np.bincount(owner[owner >= 0], minlength=num_workers)
    targets = []
    wanted = 0
    for units, groups, num_groups in kinds:
        current = balance.count_matrix(owner[units], groups, num_groups, num_workers)
        sizes = np.bincount(groups[owner[units] != HELD], minlength=num_groups)
        target = balance.target_counts(current, sizes, load)
        wanted += balance.excess(current, target)
        targets.append(target)
    if lost.holds:
        decision = decide(guard, now_ms, False, max_delay_ms)
        skipped = HELD_WORK_PENDING if wanted else None
    else:
        decision = decide(guard, now_ms, wanted > 0, max_delay_ms)
        skipped = STORM_GUARD if wanted and not decision.allow_moves else None
    before = owner.copy()
    for (units, groups, _), target in zip(kinds, targets, strict=True):
        owner[units] = balance.place(owner[units], groups, target, decision.allow_moves, load)
    moved = int(((before >= 0) & (owner != before)).sum())
    return owner, moved, skipped, decision.guard, decision.retry_at_ms


def _earliest(*times_ms: int) -> int:
    scheduled = [t for t in times_ms if t != NO_TIME]
    return min(scheduled) if scheduled else NO_TIME


# -- step 4: memory and per-member answers ---------------------------------------------------


def _next_state(
    layout: WorkLayout,
    members: Sequence[ConnectGroupMember],
    owner: np.ndarray,
    lost: LostWork,
    guard: StormGuard,
    labels: list,
    found: tuple[GroupState, int] | None,
    now_ms: int,
) -> GroupState:
    """The state to carry forward; it keeps the previous stamp when nothing changed."""
    roster = tuple(WorkerKey(m.member_id, m.instance_id) for m in members)
    roster += tuple(h.owner for h in lost.holds)
    owners = np.where(owner >= 0, owner, -1).astype(np.int32)
    held = tuple(
        HeldWork(h.owner, h.lost_at_ms, *_names(layout, np.sort(h.units), labels))
        for h in lost.holds
    )
    state = GroupState(
        stamp=now_ms,
        roster=roster,
        connectors=tuple(zip(layout.names, layout.task_counts.tolist(), strict=True)),
        connector_owners=owners[layout.connector_units],
        task_owners=owners[layout.task_units],
        held=held,
        storm=guard,
    )
    if found is None:
        return state
    previous, version = found
    if _reads_back_as(state, previous, version):
        return replace(state, stamp=previous.stamp)
    return replace(state, stamp=max(previous.stamp + 1, now_ms))


def _reads_back_as(state: GroupState, previous: GroupState, version: int) -> bool:
    """Would ``state``, written at the ``version`` ``previous`` was read at, read back equal?

    Comparing the written form keeps a group whose newest copy is at version 1 (no instance
    ids) from seeing a change, and bumping the stamp, on every round.
    """
    if state.same_content(previous):
        return True
    return encode(WorkerMetadata(state=state), version) == encode(
        WorkerMetadata(state=replace(previous, stamp=state.stamp)), version
    )


def _names(layout: WorkLayout, units: np.ndarray, labels: list) -> tuple[tuple, tuple]:
    connectors, tasks = layout.split(units, labels)
    return tuple(sorted(connectors)), tuple(sorted(tasks))


def _member_assignments(
    layout: WorkLayout,
    members: Sequence[ConnectGroupMember],
    owner: np.ndarray,
    labels: list,
    state: GroupState,
    next_rebalance_ms: int,
    versions: VersionRange,
    state_copies: int,
) -> tuple[ConnectMemberAssignment, ...]:
    written = [write_version(versions, m.readable_version()) for m in members]
    carriers = choose_carriers(written, state_copies)
    cache: dict[tuple[int, bool], bytes] = {}
    result = []
    for w, (member, units) in enumerate(
        zip(members, owners_by_worker(owner, len(members)), strict=True)
    ):
        carries = w in carriers
        key = (written[w], carries)
        if key not in cache:
            content = WorkerMetadata(next_rebalance_ms, state if carries else None)
            cache[key] = encode(content, written[w])
        connectors, tasks = layout.split(units, labels)
        result.append(
            ConnectMemberAssignment(
                member_id=member.member_id,
                version=written[w],
                metadata=cache[key],
                connectors=connectors,
                tasks=tasks,
            )
        )
    return tuple(result)


def choose_carriers(written_versions: Sequence[int], copies: int) -> set[int]:
    """Which members (indices, sorted by member id) carry the group state.

    One per distinct version first, newest version first, so that whichever member the
    coordinator picks next can read a copy; then the lowest member ids at the newest
    versions, up to ``copies``.
    """
    order = sorted(range(len(written_versions)), key=lambda w: (-written_versions[w], w))
    carriers: set[int] = set()
    seen_versions: set[int] = set()
    for w in order:
        if written_versions[w] not in seen_versions and len(carriers) < copies:
            carriers.add(w)
            seen_versions.add(written_versions[w])
    for w in order:
        if len(carriers) >= copies:
            break
        carriers.add(w)
    return carriers
