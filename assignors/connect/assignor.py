"""``IncrementalCooperativeAssignor``: the ConnectAssignor both halves of a worker use.

On the worker the coordinator picks, :meth:`~IncrementalCooperativeAssignor.assign` runs
one round (:func:`assignors.connect.plan.plan_round`). On every worker the same object
keeps the metadata its last assignment carried (:meth:`on_assignment`) and sends it back
(:meth:`metadata`), so the assignor's memory survives whichever worker computes next.

Delayed rebalances (seed 004, "Triggering Rebalances"): the coordinator only rebalances
when something changes, so a worker asks for one when a delay it was told about is over.
:meth:`next_rebalance_delay_ms` says how long to wait; once it reaches 0,
:meth:`metadata` reports :data:`REASON_REBALANCE_DUE`, and the change of reason bumps the
group epoch. The worker brings the clock: nothing here reads one.
"""

from __future__ import annotations

from assignors.client.interfaces import (
    Assignment,
    AssignorMetadata,
    ConnectAssignor,
    ConnectGroup,
    MemberAssignment,
)
from assignors.connect.metadata import MAX_VERSION, MIN_VERSION, remaining_delay_ms
from assignors.connect.plan import ConnectRound, plan_round

NAME = "incremental-cooperative"
DEFAULT_MAX_DELAY_MS = 300_000  # Kafka's scheduled.rebalance.max.delay.ms
DEFAULT_STATE_COPIES = 3

REASON_NONE = 0
REASON_REBALANCE_DUE = 1  # a delay this worker was told about is over: recompute


class IncrementalCooperativeAssignor(ConnectAssignor):
    """Kafka Connect's incremental cooperative assignment, pure and versioned.

    ``scheduled_rebalance_max_delay_ms``: how long a departed worker's work is held for its
    return (0: reassigned in the round it is lost). ``minimum_version`` /
    ``maximum_version``: the metadata versions this worker reads and writes, within
    ``[MIN_VERSION, MAX_VERSION]``. ``state_copies``: how many members carry the group
    state; the state is lost (and lost work treated as new, as after a Kafka leader change)
    only if all of them leave in one round.
    """

    def __init__(
        self,
        scheduled_rebalance_max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        *,
        minimum_version: int = MIN_VERSION,
        maximum_version: int = MAX_VERSION,
        state_copies: int = DEFAULT_STATE_COPIES,
    ) -> None:
        if scheduled_rebalance_max_delay_ms < 0:
            raise ValueError("scheduled_rebalance_max_delay_ms must be >= 0")
        if not MIN_VERSION <= minimum_version <= maximum_version <= MAX_VERSION:
            raise ValueError(
                f"versions must satisfy {MIN_VERSION} <= minimum <= maximum <= {MAX_VERSION}"
            )
        if state_copies < 1:
            raise ValueError("state_copies must be >= 1")
        self.max_delay_ms = scheduled_rebalance_max_delay_ms
        self._versions = (minimum_version, maximum_version)
        self.state_copies = state_copies
        self._received: MemberAssignment | None = None

    # -- Assignor ------------------------------------------------------------------------

    def name(self) -> str:
        return NAME

    def minimum_version(self) -> int:
        return self._versions[0]

    def maximum_version(self) -> int:
        return self._versions[1]

    def metadata(self, now_ms: int | None = None) -> AssignorMetadata:
        """The metadata last received, echoed back; the reason says whether a delay is over.

        Without ``now_ms`` the reason is :data:`REASON_NONE`. A worker that never received
        an assignment sends empty metadata at its maximum version.
        """
        reason = REASON_NONE
        if now_ms is not None and self.next_rebalance_delay_ms(now_ms) == 0:
            reason = REASON_REBALANCE_DUE
        if self._received is None:
            return AssignorMetadata(reason=reason, version=self._versions[1])
        return AssignorMetadata(
            reason=reason, version=self._received.version, metadata=self._received.metadata
        )

    def assign(self, group: ConnectGroup) -> Assignment:  # type: ignore[override]
        """The whole group's new assignment; ``group.now_ms`` is required."""
        return Assignment(error=0, members=self.plan(group).members)

    def on_assignment(self, assignment: MemberAssignment) -> None:
        """Remember this worker's metadata, to send back and to time the next rebalance."""
        self._received = assignment

    # -- beyond the interface -------------------------------------------------------------

    def plan(self, group: ConnectGroup) -> ConnectRound:
        """:meth:`assign` with the round's reasoning (moves, holds, schedule) attached."""
        return plan_round(
            group,
            max_delay_ms=self.max_delay_ms,
            versions=self._versions,
            state_copies=self.state_copies,
        )

    def next_rebalance_delay_ms(self, now_ms: int) -> int | None:
        """Milliseconds until this worker should ask for a rebalance; ``None``: never."""
        if self._received is None:
            return None
        return remaining_delay_ms(self._received.metadata, self._received.version, now_ms)

    def reset(self) -> None:
        """Forget the last assignment (a fenced worker rejoining with epoch 0 starts over)."""
        self._received = None
