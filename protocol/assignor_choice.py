"""Which assignor computes a group's target: the rule consumer and Connect groups share.

Both KIP-848 consumer groups (seed 000) and Connect worker groups (seed 004) let members ask
for a server-side assignor or offer client-side ones with version ranges; the coordinator picks
one for the whole group, and for a client-side one the member that runs it. The group types
differ only in their default server assignor, so the rule lives here, below both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from assignors.client.interfaces import common_version_range, select_by_version_range
from protocol.records import ClientAssignorEntry


@dataclass(frozen=True)
class AssignorChoice:
    """Which assignor computes the group's target: the server's, or a member's (client side)."""

    name: str
    client_side: bool
    # client side only: who computes, and the metadata versions every member understands
    chosen_member_id: str | None = None
    version_range: tuple[int, int] | None = None


class AssignorAsker(Protocol):
    """What the rule reads of a member (consumer or Connect worker)."""

    @property
    def member_id(self) -> str: ...
    @property
    def server_assignor(self) -> str | None: ...
    @property
    def client_assignors(self) -> tuple[ClientAssignorEntry, ...]: ...


class AssignorTally:
    """What a group's members ask of the rule, counted as their metadata comes and goes, so a
    group of thousands chooses without a pass over its members: a join changes the counts, and
    only a group whose every member offers client-side assignors needs the members themselves.
    """

    __slots__ = ("members", "offering", "requested")

    def __init__(self) -> None:
        self.requested: Counter = Counter()  # server assignor name -> members naming it
        self.members = 0
        self.offering = 0  # members offering client-side assignors

    @classmethod
    def of(cls, members: Iterable[Any]) -> AssignorTally:
        """The tally of ``members`` (anything with ``server_assignor`` and
        ``client_assignors``: members or their metadata records)."""
        tally = cls()
        for member in members:
            tally.change(None, member)
        return tally

    def change(self, old: Any, new: Any) -> None:
        """A member's metadata went from ``old`` to ``new`` (``None``: absent)."""
        for meta, step in ((old, -1), (new, 1)):
            if meta is None:
                continue
            self.members += step
            name = getattr(meta, "server_assignor", None)
            if name is not None:
                self.requested[name] += step
                if self.requested[name] <= 0:
                    del self.requested[name]
            if getattr(meta, "client_assignors", ()):
                self.offering += step


def choose_assignor(members: Iterable[AssignorAsker], default_assignor: str,
                    tally: AssignorTally | None = None) -> AssignorChoice:
    """Pick the group's assignor from what its members asked for.

    Members naming a server assignor win: the most requested one (ties by name). Otherwise, if
    every member offers client-side assignors and some name is common to all, the common name
    with the best summed priority (list position) is used, computed by the member whose version
    range covers everyone's (seed 004). Otherwise ``default_assignor`` (server side).
    ``tally``, when given, is those members' ``AssignorTally``: the members are then read only
    for a client-side choice.
    """
    if tally is None:
        members = list(members)
        tally = AssignorTally.of(members)
    requested = tally.requested
    if requested:
        name = min(requested, key=lambda n: (-requested[n], n))
        return AssignorChoice(name, client_side=False)
    if tally.members and tally.offering == tally.members:
        members = list(members)
        common = set.intersection(*({a.name for a in m.client_assignors} for m in members))
        if common:

            def rank(name: str) -> tuple[int, str]:
                return (
                    sum([a.name for a in m.client_assignors].index(name) for m in members),
                    name,
                )

            name = min(common, key=rank)
            ranges = {
                m.member_id: (e.minimum_version, e.maximum_version)
                for m in members
                for e in m.client_assignors
                if e.name == name
            }
            return AssignorChoice(
                name,
                client_side=True,
                chosen_member_id=select_by_version_range(ranges),
                version_range=common_version_range(ranges),
            )
    return AssignorChoice(default_assignor, client_side=False)
