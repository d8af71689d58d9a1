"""The request checks every modern group's heartbeat shares (seed 004 lists them; seed 000
elides the consumer copy): the assignors a member offers, and the server assignor it names.

Run before anything else, so a refused heartbeat changes nothing (invariant 6).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from protocol.errors import CoordinatorError, Errors, invalid_request


def validate_assignor_list(req: Any, nonempty_server: bool = False) -> None:
    """INVALID_REQUEST for a malformed assignor list (``nonempty_server``: an empty server
    assignor name is one too; Connect checks it, consumers refuse it as unsupported)."""
    if req.server_assignor is not None and req.client_assignors is not None:
        raise invalid_request("ServerAssignor and ClientAssignors cannot be used together.")
    if nonempty_server and req.server_assignor is not None and not req.server_assignor:
        raise invalid_request("ServerAssignor can't be empty.")
    names = set()
    for a in req.client_assignors or ():
        if not a.name:
            raise invalid_request("Assignor.Name must be non-empty.")
        if a.name in names:
            raise invalid_request(f"Assignor {a.name!r} is listed twice.")
        names.add(a.name)
        if a.minimum_version < -1:
            raise invalid_request("Assignor.MinimumVersion must be >= -1.")
        if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
            raise invalid_request(
                "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion."
            )
        if not a.minimum_version <= a.metadata_version <= a.maximum_version:
            raise invalid_request(
                "Assignor.Version must be >= Assignor.MinimumVersion "
                "and <= Assignor.MaximumVersion."
            )


def check_server_assignor(req: Any, supported: Iterable[str]) -> None:
    """UNSUPPORTED_ASSIGNOR for a server assignor the coordinator does not have."""
    supported = tuple(supported)
    if req.server_assignor is not None and req.server_assignor not in supported:
        raise CoordinatorError(
            Errors.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor!r} is not supported; "
            f"supported: {', '.join(supported)}.",
        )
