"""FindCoordinator (v0-v6): each group's coordinator is the partition that owns it.

Every ``__consumer_offsets`` partition actor is a broker of its own (node ``1000 + p``), so
FindCoordinator names the one a group hashes to (``protocol.placement``), and the client talks
to it directly, as to a Kafka coordinator. While that partition is not known to listen (it is
restarting, maybe on another node) the key gets COORDINATOR_NOT_AVAILABLE, which clients
retry, as while a Kafka coordinator moves. v0-v3 ask for one key, v4+ for a batch (KIP-699),
answered key by key. Transaction and share coordinators are not Cohort's: those keys get
COORDINATOR_NOT_AVAILABLE with a message saying so.
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode as E

from protocol.wire.topics import Node

GROUP_KEY_TYPE = 0
BATCHED_SINCE = 4
NOT_GROUPS = "Cohort coordinates groups only (key type {key_type})."
NOT_LISTENING = "The group's coordinator is moving; retry."


def find_coordinator_response(body: dict, version: int,
                              coordinator_of: Callable[[str], Node | None],
                              may_describe_group: Callable[[str], bool]) -> dict:
    """``coordinator_of(group)``: the broker coordinating it now, or None if none listens."""
    key_type = body.get("key_type", GROUP_KEY_TYPE)
    keys = body.get("coordinator_keys", []) if version >= BATCHED_SINCE else [body["key"]]
    entries = [_entry(k, key_type, coordinator_of, may_describe_group) for k in keys]
    if version >= BATCHED_SINCE:
        return {"throttle_time": 0, "coordinators": entries}
    (entry,) = entries
    return {"throttle_time": 0, **{k: v for k, v in entry.items() if k != "key"}}


def _entry(key: str, key_type: int, coordinator_of: Callable[[str], Node | None],
           may_describe_group: Callable[[str], bool]) -> dict:
    entry = {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": 0,
             "error_message": None}
    if key_type != GROUP_KEY_TYPE:
        error, message = E.coordinator_not_available, NOT_GROUPS.format(key_type=key_type)
    elif not may_describe_group(key):
        error, message = E.group_authorization_failed, f"Not authorized to describe {key}."
    elif (node := coordinator_of(key)) is None:
        error, message = E.coordinator_not_available, NOT_LISTENING
    else:
        return {**entry, "node_id": node.node_id, "host": node.host, "port": node.port}
    return {**entry, "error_code": error.value, "error_message": message}
