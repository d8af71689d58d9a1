"""Balanced, sticky placement of one kind of unit (connectors, or tasks) over workers.

Units come in *groups*: tasks are grouped by connector, connectors form a single group.
The target is a count matrix ``X[g, w]``, the number of group-``g`` units worker ``w`` runs:

* **Spread per group.** ``X[g, w]`` is ``q_g = n_g // W`` or ``q_g + 1``; exactly
  ``r_g = n_g % W`` workers get the ``+1`` (the group's *extras*). So one connector's tasks
  never pile up on one worker.
* **Balanced in total.** Every worker holds ``sum(q_g)`` plus its extras, and extras per
  worker differ by at most one, so totals differ by at most one too.
* **Sticky.** Among such targets, one that keeps as many units in place as found: every
  worker keeps ``min(current, X)`` of each group, and the extras go first to workers that
  already hold ``q_g + 1`` or more of that group (each such choice saves one move). A
  layout that already fits is its own target, so a rerun moves nothing.

Finding the fewest moves exactly is a min-cost flow over ``groups x workers`` edges (two
million at 2,000 connectors and 1,000 workers), too slow here. The greedy (most constrained
groups first) plus a local search (:meth:`_Extras.improve`) matches a brute-force minimum on
every small group tried, moves exactly the newcomer's share on joins at bench scale, and on
random joins and leaves of up to 20 connectors x 30 workers moved 4 units more than a
min-cost flow over 5,711 units (0.07 %).

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
    extras = _Extras(rich, spare_units, load)
    extras.settle_rich()
    extras.fill(only_rich=True)
    extras.fill(only_rich=False)
    extras.swap_in_rest()
    extras.improve()
    return base[:, None] + extras.matrix


class _Extras:
    """Which workers get a group's ``+1`` units: the ``B`` in ``X = q + B``.

    Row ``g`` must hold ``wanted[g]`` ones (``r_g``), at most one per worker. Columns hold
    ``low = E // W`` ones each, ``plus_ones = E % W`` of them one more (``E = sum(r_g)``),
    which keeps worker totals within one. Which columns take the plus-ones is decided as
    the ones are placed, so a row is never refused a worker that could still take it.
    """

    def __init__(self, rich: np.ndarray, wanted: np.ndarray, load: np.ndarray) -> None:
        self.rich = rich
        self.wanted = wanted
        self.load = load
        self.num_workers = rich.shape[1]
        self.low, self.plus_ones = divmod(int(wanted.sum()), self.num_workers)
        self.matrix = np.zeros(rich.shape, dtype=bool)
        self.count = np.zeros(self.num_workers, dtype=np.int64)  # ones per column

    def settle_rich(self) -> None:
        """Groups with no more rich workers than extras: every rich worker keeps one.

        Then columns are trimmed back to the limits: none above ``low + 1``, and only
        ``plus_ones`` of them above ``low``, kept for the workers with the most ones, then
        rich in the most groups, then the least loaded. A trimmed worker gives up its ones
        in the groups missing the fewest so far, so the gaps land in distinct groups and a
        newcomer (one per group at most) can fill them all.
        """
        rich = self.rich
        matrix = rich & (rich.sum(axis=1) <= self.wanted)[:, None]
        count = matrix.sum(axis=0)
        order = np.lexsort((np.arange(self.num_workers), self.load, -rich.sum(axis=0), -count))
        cap = np.full(self.num_workers, self.low, dtype=np.int64)
        cap[order[: self.plus_ones]] += 1
        missing = self.wanted - matrix.sum(axis=1)
        for w in np.flatnonzero(count > cap):
            rows = np.flatnonzero(matrix[:, w])
            drop = rows[np.lexsort((rows, missing[rows]))[: count[w] - cap[w]]]
            matrix[drop, w] = False
            missing[drop] += 1
        self.matrix = matrix
        self.count = matrix.sum(axis=0)

    def fill(self, only_rich: bool) -> None:
        """Place missing ones, the most constrained groups first.

        Groups go by slack (workers open to them minus ones missing), fewest first. Each
        prefers the workers with the fewest ones so far (later groups still find distinct
        workers), then those fewer of the waiting groups could use, then the least loaded,
        then the lower index. With ``only_rich``, only workers already rich in the group are
        open to it: each saves a move.
        """
        missing = self.wanted - self.matrix.sum(axis=1)
        rows = np.flatnonzero(missing > 0)
        if not len(rows):
            return
        open_ = ~self.matrix[rows] & self._accepts()[None, :]
        if only_rich:
            open_ &= self.rich[rows]
        demand = open_.sum(axis=0)
        slack = open_.sum(axis=1) - missing[rows]
        for i in np.lexsort((rows, -missing[rows], slack)):
            g = rows[i]
            demand -= open_[i]
            usable = ~self.matrix[g] & self._accepts()
            if only_rich:
                usable &= self.rich[g]
            candidates = np.flatnonzero(usable)
            count = self.count[candidates]
            order = np.lexsort((candidates, self.load[candidates], demand[candidates], count))
            candidates, count = candidates[order], count[order]
            # Taking a worker already at ``low`` uses up one of the plus-ones.
            at_low = count == self.low
            slots = self.plus_ones - int((self.count > self.low).sum())
            chosen = candidates[~at_low | (np.cumsum(at_low) <= slots)][: missing[g]]
            self.matrix[g, chosen] = True
            self.count[chosen] += 1

    def _accepts(self) -> np.ndarray:
        """Workers that may take one more: below ``low``, or at it while plus-ones remain."""
        if int((self.count > self.low).sum()) < self.plus_ones:
            return self.count <= self.low
        return self.count < self.low

    def swap_in_rest(self) -> None:
        """Ones no worker with room could take (it already has one of that group).

        Fix which workers take the plus-ones, then place each missing one directly if a
        worker with room lacks group ``g``. Otherwise every worker with room, say ``w``,
        has one of ``g``: take a full worker ``v`` without a one of ``g``; some group
        ``h`` has a one on ``v`` but not on ``w`` (``v`` holds at least as many ones as
        ``w`` and lacks ``g``, which ``w`` has). Move ``h``'s one to ``w``, give ``g`` the
        place on ``v``.
        """
        missing = self.wanted - self.matrix.sum(axis=1)
        if not missing.any():
            return
        count = self.count.copy()
        cap = np.full(self.num_workers, self.low, dtype=np.int64)
        spare_plus = self.plus_ones - int((count > self.low).sum())
        cap[count > self.low] += 1
        cap[np.flatnonzero(count <= self.low)[:spare_plus]] += 1
        room = cap - count
        for g in np.flatnonzero(missing):
            for _ in range(int(missing[g])):
                self._swap_in(room, int(g))

    def improve(self) -> None:
        """Local search: exchanges that let more rich workers keep their extra.

        For every rich worker ``w`` left without the extra of group ``g``: hand it ``g``'s
        extra from a worker ``u`` that is not rich in ``g``, either outright (``u`` gives up
        a plus-one ``w`` can take) or by exchange (some group ``h`` moves its extra from
        ``w`` to ``u``, when that loses no more than it gains). Every step keeps more rich
        extras, which bounds the loop.
        """
        m, rich = self.matrix, self.rich
        count = m.sum(axis=0)
        improved = True
        while improved:
            improved = False
            for g, w in zip(*np.nonzero(rich & ~m), strict=True):
                if not m[g, w] and self._exchange(int(g), int(w), count):
                    improved = True

    def _exchange(self, g: int, w: int, count: np.ndarray) -> bool:
        m, rich = self.matrix, self.rich
        givers = np.flatnonzero(m[g] & ~rich[g])
        if not len(givers):
            return False
        if self.plus_ones and count[w] == self.low:
            spare = givers[count[givers] == self.low + 1]
            if len(spare):
                u = spare[0]
                m[g, u], m[g, w] = False, True
                count[u] -= 1
                count[w] += 1
                return True
        for u in givers:
            # h's extra moves w -> u: allowed when it loses no rich extra on balance.
            ok = m[:, w] & ~m[:, u] & (rich[:, u] | ~rich[:, w])
            ok[g] = False
            hs = np.flatnonzero(ok)
            if len(hs):
                h = hs[0]
                m[g, u], m[g, w], m[h, w], m[h, u] = False, True, False, True
                return True
        return False

    def _swap_in(self, room: np.ndarray, g: int) -> None:
        m = self.matrix
        direct = np.flatnonzero((room > 0) & ~m[g])
        if len(direct):
            m[g, direct[0]] = True
            room[direct[0]] -= 1
            return
        w = int(np.flatnonzero(room > 0)[0])
        for v in np.flatnonzero(~m[g]):
            movable = np.flatnonzero(m[:, v] & ~m[:, w])
            if len(movable):
                h = movable[0]
                m[h, v], m[h, w], m[g, v] = False, True, True
                room[w] -= 1
                return
        raise AssertionError("a missing extra always finds a place by one swap")


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
