"""FindCoordinator (v0-v6): the gateway is every group's coordinator.

The gateway stands in front of every ``__consumer_offsets`` partition actor and routes each
group's requests to the one that owns it, so to a client it is the coordinator of every group;
where a group really lives (``protocol.placement``) stays inside. v0-v3 ask for one key,
v4+ for a batch (KIP-699), answered key by key. Transaction and share coordinators are not
Cohort's: those keys get COORDINATOR_NOT_AVAILABLE with a message saying so.
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode as E

from protocol.wire.topics import Node

GROUP_KEY_TYPE = 0
BATCHED_SINCE = 4
NOT_GROUPS = "Cohort coordinates groups only (key type {key_type})."


def find_coordinator_response(body: dict, version: int, node: Node,
                              may_describe_group: Callable[[str], bool]) -> dict:
    key_type = body.get("key_type", GROUP_KEY_TYPE)
    keys = body.get("coordinator_keys", []) if version >= BATCHED_SINCE else [body["key"]]
    entries = [_entry(k, key_type, node, may_describe_group) for k in keys]
    if version >= BATCHED_SINCE:
        return {"throttle_time": 0, "coordinators": entries}
    (entry,) = entries
    return {"throttle_time": 0, **{k: v for k, v in entry.items() if k != "key"}}


def _entry(key: str, key_type: int, node: Node,
           may_describe_group: Callable[[str], bool]) -> dict:
    entry = {"key": key, "node_id": node.node_id, "host": node.host, "port": node.port,
             "error_code": 0, "error_message": None}
    if key_type != GROUP_KEY_TYPE:
        error, message = E.coordinator_not_available, NOT_GROUPS.format(key_type=key_type)
    elif not may_describe_group(key):
        error, message = E.group_authorization_failed, f"Not authorized to describe {key}."
    else:
        return entry
    return {**entry, "node_id": -1, "host": "", "port": -1, "error_code": error.value,
            "error_message": message}
