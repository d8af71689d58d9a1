"""Balanced, sticky placement of one kind of unit (connectors, or tasks) over workers.

Units come in *groups*: tasks are grouped by connector, connectors form a single group.
The target is a count matrix ``X[g, w]``, the number of group-``g`` units worker ``w`` runs:

* **Spread per group.** ``X[g, w]`` is ``q_g = n_g // W`` or ``q_g + 1``; exactly
  ``r_g = n_g % W`` workers get the ``+1`` (the group's *extras*). So one connector's tasks
  never pile up on one worker.
* **Balanced in total.** Every worker holds ``sum(q_g)`` plus its extras, and extras per
  worker differ by at most one, so totals differ by at most one too.
* **Sticky.** Among such targets, one that keeps as many units in place as a greedy can
  find: every worker keeps ``min(current, X)`` of each group, and the extras go first to
  workers that already hold ``q_g + 1`` or more of that group (each such choice saves one
  move). A group's layout that already fits is its own target, so a rerun moves nothing.

:func:`place` then keeps the lowest units of each (group, worker) up to the target and
deals the free units into the gaps. With moves not allowed (held work pending, or the storm
guard), nothing is taken from anyone: free units only fill gaps, lowest level first.

All steps are numpy over the ``groups x workers`` matrix; the only Python loop is over the
groups whose extras are not settled by the rich workers (each one vector step).
"""

from __future__ import annotations

import numpy as np

from assignors.connect.layout import UNASSIGNED


def count_matrix(
    owner: np.ndarray, groups: np.ndarray, num_groups: int, num_workers: int
) -> np.ndarray:
    """``H[g, w]``: how many group-``g`` units worker ``w`` owns now."""
    owned = owner >= 0
    flat = groups[owned] * num_workers + owner[owned]
    return np.bincount(flat, minlength=num_groups * num_workers).reshape(num_groups, num_workers)


def target_counts(
    current: np.ndarray, sizes: np.ndarray, load: np.ndarray | None = None
) -> np.ndarray:
    """The target ``X`` for groups of ``sizes`` units, as close to ``current`` as found.

    ``load`` (per worker, e.g. every unit it runs of any kind) breaks ties between workers
    that are otherwise equal: the less loaded gets the extra unit. Default: no preference.
    """
    num_workers = current.shape[1]
    if load is None:
        load = np.zeros(num_workers, dtype=np.int64)
    base, spare_units = np.divmod(sizes, num_workers)
    rich = current > base[:, None]
    # Groups with no more rich workers than extras settle at once: every rich one keeps one.
    extras = rich & (rich.sum(axis=1) <= spare_units)[:, None]
    cap = _extras_per_worker(extras.sum(axis=0), int(spare_units.sum()), load)
    if (extras.sum(axis=0) > cap).any():
        extras &= np.cumsum(extras, axis=0) <= cap[None, :]
    _fill_extras(extras, rich, spare_units, cap, load)
    return base[:, None] + extras


def _extras_per_worker(held: np.ndarray, total: int, load: np.ndarray) -> np.ndarray:
    """How many extras each worker gets: ``total // W``, plus one for ``total % W`` of them.

    The plus-ones go to the workers already holding the most extras, then the least
    loaded, then the lower index.
    """
    num_workers = len(held)
    low, plus_ones = divmod(total, num_workers)
    cap = np.full(num_workers, low, dtype=np.int64)
    if plus_ones:
        cap[np.lexsort((np.arange(num_workers), load, -held))[:plus_ones]] += 1
    return cap


def _fill_extras(
    extras: np.ndarray, rich: np.ndarray, wanted: np.ndarray, cap: np.ndarray, load: np.ndarray
) -> None:
    """Hand out the extras still missing, in place.

    Groups missing the most go first; each takes rich workers first (one move saved each),
    then those with the most room left (so later groups still find distinct workers), then
    the least loaded, then the lower index.
    """
    missing = wanted - extras.sum(axis=1)
    room = cap - extras.sum(axis=0)
    for g in np.flatnonzero(missing > 0)[np.argsort(-missing[missing > 0], kind="stable")]:
        need = int(missing[g])
        candidates = np.flatnonzero(~extras[g] & (room > 0))
        if len(candidates) > need:
            best = np.lexsort(
                (candidates, load[candidates], -room[candidates], ~rich[g, candidates])
            )
            candidates = candidates[best[:need]]
        extras[g, candidates] = True
        room[candidates] -= 1
        for _ in range(need - len(candidates)):
            _swap_in(extras, room, g)


def _swap_in(extras: np.ndarray, room: np.ndarray, g: int) -> None:
    """Give group ``g`` one more extra when every worker with room already has one of it.

    Take a worker ``w`` with room and a full worker ``v`` without an extra of ``g``; some
    group ``h`` has an extra on ``v`` but not on ``w`` (``v`` holds at least as many extras
    as ``w`` and lacks ``g``, which ``w`` has). Move ``h``'s extra from ``v`` to ``w`` and
    give ``v``'s freed place to ``g``.
    """
    w = int(np.flatnonzero(room > 0)[0])
    for v in np.flatnonzero(~extras[g]):
        movable = np.flatnonzero(extras[:, v] & ~extras[:, w])
        if len(movable):
            h = movable[0]
            extras[h, v], extras[h, w], extras[g, v] = False, True, True
            room[w] -= 1
            return
    raise AssertionError("an extra must always find a place by one swap")


def excess(current: np.ndarray, target: np.ndarray) -> int:
    """How many units would have to leave their worker to reach ``target``."""
    return int(np.maximum(current - target, 0).sum())


def place(
    owner: np.ndarray,
    groups: np.ndarray,
    target: np.ndarray,
    allow_moves: bool,
    load: np.ndarray | None = None,
) -> np.ndarray:
    """The new owner array: keep up to ``target`` (or everything), deal the free units.

    ``owner`` holds worker indices, :data:`UNASSIGNED` for free units and any other negative
    code for units that are out of play (held). ``load`` breaks ties as in
    :func:`target_counts` (default: this kind's units). Returns a new array.
    """
    num_groups, num_workers = target.shape
    owner = owner.copy()
    if allow_moves:
        _release_excess(owner, groups, target)
    current = count_matrix(owner, groups, num_groups, num_workers)
    free = np.flatnonzero(owner == UNASSIGNED)
    if len(free) == 0 or num_workers == 0:
        return owner
    owner[free] = _deal(groups[free], target, current, load)
    return owner


def _release_excess(owner: np.ndarray, groups: np.ndarray, target: np.ndarray) -> None:
    """Each worker keeps its lowest units of each group up to the target; frees the rest."""
    num_workers = target.shape[1]
    owned = np.flatnonzero(owner >= 0)
    key = groups[owned] * num_workers + owner[owned]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_key, sorted_key, side="left")
    released = owned[order[rank >= target.ravel()[sorted_key]]]
    owner[released] = UNASSIGNED


def _deal(
    free_groups: np.ndarray, target: np.ndarray, current: np.ndarray, load: np.ndarray | None
) -> np.ndarray:
    """Workers for the free units (given ascending by group): fill the gaps below target.

    A gap of ``k`` units is ``k`` slots at levels ``0..k-1``; each group's free units take
    its slots lowest level first, then least loaded worker, then lower index, so units
    spread before they stack when there are fewer free units than gaps.
    """
    num_groups, num_workers = target.shape
    gaps = np.maximum(target - current, 0).ravel()
    slot = np.repeat(np.arange(num_groups * num_workers), gaps)
    level = np.arange(len(slot)) - np.repeat(np.cumsum(gaps) - gaps, gaps)
    group, worker = np.divmod(slot, num_workers)
    if load is None:
        load = current.sum(axis=0)
    order = np.lexsort((worker, load[worker], level, group))
    group, worker = group[order], worker[order]
    rank = np.arange(len(order)) - np.searchsorted(group, group, side="left")
    wanted = np.bincount(free_groups, minlength=num_groups)
    chosen = worker[rank < wanted[group]]
    if len(chosen) != len(free_groups):
        raise AssertionError("the target leaves room for every free unit")
    return chosen
