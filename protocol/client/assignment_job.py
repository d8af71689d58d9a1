"""The chosen member's side of client-side assignment: prepare, compute, install (seeds 000, 004).

When a group's members run a client-side assignor, the coordinator asks one of them (the
one whose version range covers everyone's) to compute the group's assignment: a consumer
sees ``should_compute_assignment`` in its heartbeat reply, a Connect worker the error code
``COMPUTE_ASSIGNMENT``. That member then

1. sends PrepareAssignment and gets the group's state (members, their assignor metadata and
   current targets, the topics or connectors),
2. runs its own assignor of the name the coordinator chose over that state,
3. sends InstallAssignment with the result, tagged with the group epoch it was computed for.

``AssignmentJob`` is those steps as a pure object shared by the consumer and the Connect
worker client halves; what differs (the request types, how the group state becomes the
assignor's input) is a ``Flavour`` (``protocol/client/client_assignors.py``). It never sends
anything itself: the member asks it for its next request and feeds the replies back.

Failures are never fatal and never touch ownership: a refused or lost PrepareAssignment or
InstallAssignment drops the job, and the member's next heartbeat tells it whether it is
still the one to compute (the coordinator keeps asking until an assignment is installed for
the current epoch; an assignment installed for an older epoch is kept and asked again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from assignors.client.interfaces import Assignment, Assignor
from protocol.errors import Errors

IDLE, ASKED, PREPARING, READY, INSTALLING = "idle", "asked", "preparing", "ready", "installing"


class Flavour(Protocol):
    """How one group type spells the three steps."""

    def prepare_request(self, group_id: str, member_id: str, member_epoch: int) -> object: ...

    def assignor_input(self, prepared: Any, now_ms: int) -> Any: ...

    def install_request(
        self, group_id: str, member_id: str, member_epoch: int, prepared: Any, result: Assignment
    ) -> object: ...


@dataclass
class JobStats:
    """What the job did, for a host's stats and for tests."""

    computed: int = 0
    installed: int = 0
    refused: int = 0  # PrepareAssignment or InstallAssignment answered with an error
    failed: int = 0  # no assignor of the chosen name, or it raised
    last_error: str | None = None


class AssignmentJob:
    """One member's compute/prepare/install round, at most one request of it out at a time.

    States: ``idle`` -> ``asked`` (the coordinator asked) -> ``preparing`` (PrepareAssignment
    out) -> ``ready`` (computed; InstallAssignment to send) -> ``installing`` -> ``idle``.
    Guarantees: an assignment is computed only from a PrepareAssignment reply and installed
    with that reply's group epoch; a request goes out only when ``next_request`` returns it;
    ``abandon`` forgets everything (the member was fenced or is leaving).
    """

    def __init__(self, flavour: Flavour, assignors: Sequence[Assignor]) -> None:
        names = [a.name() for a in assignors]
        if len(set(names)) != len(names):
            raise ValueError("client assignors must have distinct names")
        self.flavour = flavour
        self.assignors = {a.name(): a for a in assignors}
        self.state = IDLE
        self.stats = JobStats()
        self._install: object | None = None

    @property
    def out(self) -> bool:
        """A request of the job is in flight."""
        return self.state in (PREPARING, INSTALLING)

    @property
    def has_request(self) -> bool:
        return self.state in (ASKED, READY)

    def ask(self) -> None:
        """The coordinator chose this member to compute; a job already under way goes on."""
        if self.state == IDLE:
            self.state = ASKED

    def abandon(self) -> None:
        self.state, self._install = IDLE, None

    def next_request(self, group_id: str, member_id: str, member_epoch: int) -> object | None:
        if self.state == ASKED:
            self.state = PREPARING
            return self.flavour.prepare_request(group_id, member_id, member_epoch)
        if self.state == READY:
            self.state, request = INSTALLING, self._install
            self._install = None
            return request
        return None

    def on_prepared(
        self, prepared: Any, group_id: str, member_id: str, member_epoch: int, now_ms: int
    ) -> None:
        """The PrepareAssignment reply: compute at once (the assignor is pure)."""
        if self.state != PREPARING:
            return
        if prepared.error_code != Errors.NONE:
            self._refused(prepared)
            return
        assignor = self.assignors.get(prepared.assignor_name)
        if assignor is None:
            self._failed(f"no client assignor named {prepared.assignor_name!r}")
            return
        try:
            result = assignor.assign(self.flavour.assignor_input(prepared, now_ms))
        except Exception as e:  # a bug in an assignor must not take the member down
            self._failed(f"assignor {prepared.assignor_name!r} failed: {e!r}")
            return
        self.stats.computed += 1
        self._install = self.flavour.install_request(
            group_id, member_id, member_epoch, prepared, result
        )
        self.state = READY

    def on_installed(self, response: Any) -> None:
        if self.state != INSTALLING:
            return
        self.state = IDLE
        if response.error_code != Errors.NONE:
            self._refused(response)
        else:
            self.stats.installed += 1

    def on_failure(self) -> None:
        """The request of the job got no reply: drop it; the coordinator will ask again."""
        if self.out:
            self.stats.refused += 1
            self.stats.last_error = "no reply"
            self.state = IDLE

    def _refused(self, response: Any) -> None:
        self.stats.refused += 1
        code = response.error_code
        name = Errors(code).name if code in Errors._value2member_map_ else str(code)
        self.stats.last_error = f"{name}: {response.error_message}"
        self.state = IDLE

    def _failed(self, why: str) -> None:
        self.stats.failed += 1
        self.stats.last_error = why
        self.state, self._install = IDLE, None
