"""Request bodies as a client would send them, with the fields a script varies as arguments.

Each builder returns a ``Step`` whose body is complete for the API's highest common version
(fields an older version lacks are dropped by the codec), so a script says only what it means:
``join("a")``, ``heartbeat("a", member_epoch=Epoch("a", -1))``, ``ack("a")``.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.script import FOO, GROUP, Epoch, Id, Owned, Step, Topic

REBALANCE_TIMEOUT_MS = 30_000
SESSION_TIMEOUT_MS = 4_000  # the session's consumer session timeout (tests/conftest.py)
ALL: Any = object()  # fetch_offsets: every committed offset of the group (topics null)


def _step(alias: str, api: str, body: dict, kw: dict) -> Step:
    options = {k: kw.pop(k) for k in ("version", "wait", "until", "fields", "view", "record",
                                     "to_bootstrap")
               if k in kw}
    body.update(kw)
    return Step(alias, api, body, **options)


# ------------------------------------------------------------------ KIP-848 consumer groups


def cg_heartbeat(alias: str, **kw: Any) -> Step:
    """A ConsumerGroupHeartbeat with every optional field null (unchanged)."""
    body = {"group_id": GROUP, "member_id": Id(alias), "member_epoch": Epoch(alias),
            "instance_id": None, "rack_id": None, "rebalance_timeout": -1,
            "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": None}
    return _step(alias, "ConsumerGroupHeartbeat", body, kw)


def join(alias: str, topics: list[str] | None = None, **kw: Any) -> Step:
    """A first heartbeat (epoch 0) subscribing to ``topics`` (cf-foo by default)."""
    kw.setdefault("member_epoch", 0)
    if kw.get("version") == 0:
        kw.setdefault("member_id", "")  # v0: the coordinator makes the id (KIP-1082 came in v1)
    kw.setdefault("rebalance_timeout", REBALANCE_TIMEOUT_MS)
    kw.setdefault("subscribed_topic_names", [FOO] if topics is None else topics)
    kw.setdefault("topic_partitions", [])
    return cg_heartbeat(alias, **kw)


def ack(alias: str, **kw: Any) -> Step:
    """A heartbeat stating what the member owns (what it was last given): it acknowledges a
    revocation."""
    kw.setdefault("topic_partitions", Owned(alias))
    return cg_heartbeat(alias, **kw)


def leave(alias: str, **kw: Any) -> Step:
    kw.setdefault("member_epoch", -1)
    return cg_heartbeat(alias, **kw)


def owns(topics: dict[str, list[int]]) -> list[dict]:
    """``topic_partitions`` naming topics by name: ``owns({FOO: [0, 1]})``."""
    return [{"topic_id": Topic(name), "partitions": parts} for name, parts in topics.items()]


def cg_describe(alias: str = "admin", groups: list | None = None, **kw: Any) -> Step:
    body = {"group_ids": [GROUP] if groups is None else groups,
            "include_authorized_operations": False}
    kw.setdefault("record", False)
    return _step(alias, "ConsumerGroupDescribe", body, kw)


def assigned(reply: dict) -> bool:
    """``until``: the reply carries a non-empty assignment."""
    a = reply.get("assignment")
    return bool(a) and any(tp["partitions"] for tp in a["topic_partitions"])


# ------------------------------------------------------------------------- share groups


def share_heartbeat(alias: str, **kw: Any) -> Step:
    body = {"group_id": GROUP, "member_id": Id(alias), "member_epoch": Epoch(alias),
            "rack_id": None, "subscribed_topic_names": None}
    return _step(alias, "ShareGroupHeartbeat", body, kw)


def share_join(alias: str, topics: list[str] | None = None, **kw: Any) -> Step:
    """A share member's first heartbeat, compared without its assignment: Kafka assigns a
    share-partition only once its share coordinator has initialised it, in the background
    (``cases_share`` polls for the settled assignment)."""
    kw.setdefault("fields", ("error_code", "member_id", "member_epoch", "heartbeat_interval"))
    kw.setdefault("member_epoch", 0)
    kw.setdefault("subscribed_topic_names", [FOO] if topics is None else topics)
    return share_heartbeat(alias, **kw)


def share_describe(alias: str = "admin", groups: list | None = None, **kw: Any) -> Step:
    body = {"group_ids": [GROUP] if groups is None else groups,
            "include_authorized_operations": False}
    kw.setdefault("record", False)
    return _step(alias, "ShareGroupDescribe", body, kw)


def share_fetch(alias: str, epoch: int, partitions: dict[str, list[int]] | None = None,
                **kw: Any) -> Step:
    """ShareFetch of ``partitions`` (cf-foo's by default) in share session epoch ``epoch``,
    waiting for nothing; compared by its error codes only (Kafka's topic is empty, Cohort's
    stream synthetic: what is acquired differs by construction, whether it may be does not)."""
    partitions = {FOO: [0, 1, 2]} if partitions is None else partitions
    body = {"group_id": GROUP, "member_id": Id(alias), "share_session_epoch": epoch,
            "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "max_records": 10,
            "batch_size": 10, "forgotten_topics_data": [],
            "topics": [{"topic_id": Topic(t), "partitions": [
                {"partition_index": p, "acknowledgement_batches": []} for p in ps]}
                for t, ps in partitions.items()]}
    kw.setdefault("record", False)
    kw.setdefault("view", fetch_errors)
    return _step(alias, "ShareFetch", body, kw)


def share_ack(alias: str, epoch: int, offsets: dict[str, dict[int, int]] | None = None,
              **kw: Any) -> Step:
    """ShareAcknowledge (ACCEPT) of one offset per partition ({topic: {partition: offset}})."""
    offsets = {FOO: {0: 0}} if offsets is None else offsets
    body = {"group_id": GROUP, "member_id": Id(alias), "share_session_epoch": epoch,
            "topics": [{"topic_id": Topic(t), "partitions": [
                {"partition_index": p, "acknowledgement_batches": [
                    {"first_offset": o, "last_offset": o, "acknowledge_types": [1]}]}
                for p, o in parts.items()]} for t, parts in offsets.items()]}
    kw.setdefault("record", False)
    kw.setdefault("view", fetch_errors)
    return _step(alias, "ShareAcknowledge", body, kw)


def fetch_errors(reply: dict) -> dict:
    """A ShareFetch / ShareAcknowledge reply's errors: the request's and each partition's
    that is not NONE (a partition with nothing to say is left out of Kafka's reply and in
    Cohort's, whose stream always has records: which partitions appear is data, not rules)."""
    return {"error_code": reply["error_code"], "partitions": sorted(
        (t["topic_id"], p["partition_index"], p["error_code"],
         p.get("acknowledge_error_code", "NONE"))
        for t in reply.get("responses", []) for p in t["partitions"]
        if p["error_code"] != "NONE" or p.get("acknowledge_error_code", "NONE") != "NONE")}


# ------------------------------------------------------------------------ classic groups

CONSUMER = "consumer"


def subscription_bytes(topics: list[str], owned: dict[str, list[int]] | None = None) -> bytes:
    """A ConsumerProtocolSubscription v0: what the classic protocol's metadata carries (an
    online migration reads the topics out of it)."""
    out = bytearray((0).to_bytes(2, "big"))
    out += len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    out += (-1).to_bytes(4, "big", signed=True)  # user data: null
    del owned
    return bytes(out)


def assignment_bytes(partitions: dict[str, list[int]]) -> bytes:
    """A ConsumerProtocolAssignment v0."""
    out = bytearray((0).to_bytes(2, "big"))
    out += len(partitions).to_bytes(4, "big")
    for t, parts in partitions.items():
        out += len(t).to_bytes(2, "big") + t.encode() + len(parts).to_bytes(4, "big")
        for p in parts:
            out += p.to_bytes(4, "big")
    out += (-1).to_bytes(4, "big", signed=True)
    return bytes(out)


def protocols(*names: str, topics: list[str] | None = None) -> list[dict]:
    meta = subscription_bytes([FOO] if topics is None else topics)
    return [{"name": n, "metadata": meta} for n in (names or ("range",))]


def join_group(alias: str, member_id: Any = "", **kw: Any) -> Step:
    body = {"group_id": GROUP, "session_timeout": SESSION_TIMEOUT_MS,
            "rebalance_timeout": REBALANCE_TIMEOUT_MS, "member_id": member_id,
            "group_instance_id": None, "protocol_type": CONSUMER,
            "protocols": protocols(), "reason": None}
    return _step(alias, "JoinGroup", body, kw)


def classic_join(alias: str, **kw: Any) -> tuple[Step, Step]:
    """A classic member's first JoinGroup (MEMBER_ID_REQUIRED, KIP-394: its reply carries
    the id, at once) and the JoinGroup that joins with that id (``wait=False``: its reply is
    parked until a ``Receive``)."""
    first = {k: v for k, v in kw.items() if k != "wait"}
    return join_group(alias, **first), join_group(alias, member_id=Id(alias), **kw)


def classic_member(alias: str, **kw: Any) -> tuple[Step, Step, Step]:
    """A lone classic member: joined, leader, and synced with an empty assignment."""
    return (*classic_join(alias, **kw),
            sync_group(alias, assignments=[{"member_id": Id(alias), "assignment": b""}]))


def rebalancing(reply: dict) -> bool:
    """``until``: another member's join (sent on its own connection, so it may still be on its
    way) has reached the group: a heartbeat is told to rejoin."""
    return reply["error_code"] == "REBALANCE_IN_PROGRESS"


def sync_group(alias: str, assignments: list | None = None, **kw: Any) -> Step:
    body = {"group_id": GROUP, "generation_id": Epoch(alias), "member_id": Id(alias),
            "group_instance_id": None, "protocol_type": CONSUMER, "protocol_name": "range",
            "assignments": assignments or []}
    return _step(alias, "SyncGroup", body, kw)


def classic_heartbeat(alias: str, **kw: Any) -> Step:
    body = {"group_id": GROUP, "generation_id": Epoch(alias), "member_id": Id(alias),
            "group_instance_id": None}
    return _step(alias, "Heartbeat", body, kw)


def leave_group(alias: str, members: list | None = None, **kw: Any) -> Step:
    body = {"group_id": GROUP, "members": members if members is not None else [
        {"member_id": Id(alias), "group_instance_id": None, "reason": None}]}
    return _step(alias, "LeaveGroup", body, kw)


def describe_groups(alias: str = "admin", groups: list | None = None, **kw: Any) -> Step:
    body = {"groups": [GROUP] if groups is None else groups,
            "include_authorized_operations": False}
    kw.setdefault("record", False)
    return _step(alias, "DescribeGroups", body, kw)


def list_groups(alias: str = "admin", states: list | None = None, types: list | None = None,
                **kw: Any) -> Step:
    body = {"states_filter": states or [], "types_filter": types or []}
    kw.setdefault("record", False)
    return _step(alias, "ListGroups", body, kw)


# ---------------------------------------------------------------------------- offsets


def commit(alias: str, offsets: dict[str, dict[int, int]] | None = None, **kw: Any) -> Step:
    """OffsetCommit of ``offsets`` ({topic: {partition: offset}}; cf-foo-0 at 10 by default),
    as ``alias`` with its id and epoch unless the caller says otherwise."""
    offsets = {FOO: {0: 10}} if offsets is None else offsets
    body = {"group_id": GROUP, "generation_id_or_member_epoch": Epoch(alias),
            "member_id": Id(alias), "group_instance_id": None, "retention_time": -1,
            "topics": [{"name": t, "topic_id": Topic(t), "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "commit_timestamp": -1, "committed_metadata": ""}
                for p, o in parts.items()]} for t, parts in offsets.items()]}
    kw.setdefault("record", False)
    return _step(alias, "OffsetCommit", body, kw)


def fetch_offsets(alias: str = "admin", topics: dict[str, list[int]] | None = None,
                  member: bool = False, epoch: Any = None, **kw: Any) -> Step:
    """OffsetFetch (v8+: the groups form) of ``topics`` (cf-foo's partitions by default;
    ``ALL``: every committed one), with ``alias``'s id and epoch (or ``epoch``) when ``member``
    (KIP-848's member-checked fetch)."""
    topics = {FOO: [0, 1, 2]} if topics is None else topics
    wanted = None if topics is ALL else [
        {"name": t, "topic_id": Topic(t), "partition_indexes": p} for t, p in topics.items()]
    group = {"group_id": GROUP, "member_id": Id(alias) if member else None,
             "member_epoch": (Epoch(alias) if epoch is None else epoch) if member else -1,
             "topics": wanted}
    # Both shapes: v8+ reads ``groups``, older versions the top-level group and topics.
    body = {"group_id": GROUP, "topics": wanted, "groups": [group], "require_stable": False}
    kw.setdefault("record", False)
    return _step(alias, "OffsetFetch", body, kw)


def offset_delete(alias: str = "admin", topics: dict[str, list[int]] | None = None,
                  **kw: Any) -> Step:
    topics = {FOO: [0]} if topics is None else topics
    body = {"group_id": GROUP, "topics": [
        {"name": t, "partitions": [{"partition_index": p} for p in parts]}
        for t, parts in topics.items()]}
    kw.setdefault("record", False)
    return _step(alias, "OffsetDelete", body, kw)


def delete_groups(alias: str = "admin", groups: list | None = None, **kw: Any) -> Step:
    body = {"groups_names": [GROUP] if groups is None else groups}
    kw.setdefault("record", False)
    return _step(alias, "DeleteGroups", body, kw)


# ---------------------------------------------------------------------------- configs

GROUP_RESOURCE = 32


def describe_configs(alias: str = "admin", names: list[str] | None = None, group: Any = GROUP,
                     **kw: Any) -> Step:
    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group,
                           "configuration_keys": names}],
            "include_synonyms": False, "include_documentation": False}
    kw.setdefault("record", False)
    return _step(alias, "DescribeConfigs", body, kw)


def alter_configs(alias: str = "admin", changes: dict[str, str | None] | None = None,
                  group: Any = GROUP, **kw: Any) -> Step:
    """IncrementalAlterConfigs on a group: ``{name: value}`` SETs, ``{name: None}`` DELETEs;
    ``op=`` forces an operation for all (2 APPEND, 3 SUBTRACT)."""
    op = kw.pop("op", None)
    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
        {"name": n, "config_operation": op if op is not None else (1 if v is None else 0),
         "value": v} for n, v in (changes or {}).items()]}],
            "validate_only": kw.pop("validate_only", False)}
    kw.setdefault("record", False)
    return _step(alias, "IncrementalAlterConfigs", body, kw)


# ------------------------------------------------------------------------ streams groups


def streams_topology(source: str = FOO, epoch: int = 1) -> dict:
    """A stateless topology of one subtopology reading ``source``: no internal topic to make,
    so a join's outcome depends on the coordinator's rules alone."""
    return {"epoch": epoch, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
        "state_changelog_topics": [], "repartition_sink_topics": [],
        "repartition_source_topics": [], "copartition_groups": []}]}


def streams_heartbeat(alias: str, **kw: Any) -> Step:
    """A StreamsGroupHeartbeat with every optional field null (unchanged)."""
    body = {"group_id": GROUP, "member_id": Id(alias), "member_epoch": Epoch(alias),
            "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout": -1, "topology": None, "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None, "process_id": None,
            "user_endpoint": None, "client_tags": None, "task_offsets": None,
            "task_end_offsets": None, "shutdown_application": False}
    return _step(alias, "StreamsGroupHeartbeat", body, kw)


def streams_join(alias: str, source: str = FOO, epoch: int = 1, **kw: Any) -> Step:
    """A streams member's first heartbeat (epoch 0) with the topology reading ``source``."""
    kw.setdefault("member_epoch", 0)
    kw.setdefault("rebalance_timeout", REBALANCE_TIMEOUT_MS)
    kw.setdefault("topology", streams_topology(source, epoch))
    for tasks in ("active_tasks", "standby_tasks", "warmup_tasks"):
        kw.setdefault(tasks, [])
    kw.setdefault("process_id", f"process-{alias}")
    kw.setdefault("client_tags", [])
    return streams_heartbeat(alias, **kw)


def streams_describe(alias: str = "admin", groups: list | None = None, **kw: Any) -> Step:
    body = {"group_ids": [GROUP] if groups is None else groups,
            "include_authorized_operations": False,
            "include_topology_description": kw.pop("include_topology_description", False)}
    kw.setdefault("record", False)
    return _step(alias, "StreamsGroupDescribe", body, kw)
