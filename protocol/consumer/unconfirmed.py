"""Which members were sent an assignment they have not yet reported holding, so it is sent again.

Kafka puts the assignment in a heartbeat reply only when it changed or the request was full
(``heartbeat_changes``). A client that loses that one reply never hears of the change:
librdkafka gives a heartbeat its interval to be answered, and on a timeout resends the very
same request (not a full one), which finds the member already moved and gets no assignment.
A member told to revoke then holds its partitions for good, and the member waiting for them
waits for good (1,000 consumers through Cohort in front of Tansu on a loaded machine: one run
in four never became stable, 11-433 members stuck so). Seed 000 asks the coordinator to bear a
lost reply ("the heartbeat response with the new member epoch may be lost"); this extends that
to the assignment: once a reply to a heartbeat that was neither a join nor full carried a changed
assignment, every reply carries it again until a heartbeat of the member states that it owns
exactly that. Clients ignore an assignment equal to the one they hold or are reconciling toward
(librdkafka acknowledges a new one at its next heartbeat, so while all is well it is sent once,
as Kafka sends it), and a member at rest costs nothing. A join or a full heartbeat needs none of it:
a client that lost its reply sends it again whole, and Kafka's rule answers with the
assignment.

The set lives beside the log, not in it: after a load it starts empty, and clients that
reconnect send full heartbeats, which are answered with the assignment anyway.
"""

from __future__ import annotations

MemberKey = tuple[str, str]  # (group id, member id)
Units = set[tuple[str, int]] | frozenset[tuple[str, int]]


class UnconfirmedAssignments:
    """Members sent an assignment that no heartbeat of theirs has yet reported holding."""

    def __init__(self) -> None:
        self._members: set[MemberKey] = set()

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, key: MemberKey) -> bool:
        return key in self._members

    def resend(self, key: MemberKey, reported: Units | None, assigned: Units) -> bool:
        """Whether the reply to this heartbeat must carry the assignment again: the member
        was sent one it has not reported holding. ``reported`` is what the heartbeat says
        the member owns (None: unchanged since its last), ``assigned`` what the coordinator
        has it hold after the heartbeat."""
        if reported is not None and reported == assigned:
            self._members.discard(key)
            return False
        return key in self._members

    def sent(self, key: MemberKey, reported: Units | None, assigned: Units,
             whole: bool) -> None:
        """The reply carries ``assigned``. ``whole``: the request was a join or a full
        heartbeat, which a client that lost the reply sends again whole, to be answered with
        the assignment anyway; otherwise the member is unconfirmed until a heartbeat of its
        reports holding it."""
        if whole or (reported is not None and reported == assigned):
            self._members.discard(key)
        else:
            self._members.add(key)

    def forget(self, key: MemberKey) -> None:
        """The member is gone (left, fenced, its group deleted)."""
        self._members.discard(key)
