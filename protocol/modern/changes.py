"""What a heartbeat changes about its member, for the fields every modern group's heartbeat has.

A heartbeat's null fields mean "unchanged"; the rest are applied to the member's metadata. A
group type adds its own fields (a consumer's subscription and rack) and decides which changes
bump the epoch.
"""

from __future__ import annotations

from typing import Any

from protocol.records import ClientAssignorEntry


def common_changes(req: Any) -> dict[str, object]:
    """The metadata fields the request sets: instance id, rebalance timeout, assignors (a
    server assignor clears the client ones and the reverse), client id and host."""
    changes: dict[str, object] = {}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
        changes["client_assignors"] = ()
    if req.client_assignors is not None:
        changes["client_assignors"] = tuple(
            ClientAssignorEntry(
                a.name,
                a.minimum_version,
                a.maximum_version,
                a.reason,
                a.metadata_version,
                a.metadata_bytes,
            )
            for a in req.client_assignors
        )
        changes["server_assignor"] = None
    if req.client_id:
        changes["client_id"] = req.client_id
    if req.client_host:
        changes["client_host"] = req.client_host
    return changes

