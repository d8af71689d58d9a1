"""StreamsGroupHeartbeat's request checks, before anything else runs: Kafka 4.4's
``throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures`` then
``throwIfStreamsGroupHeartbeatRequestIsInvalid`` (with ``throwIfInvalidTopology``), in
Kafka's order and with Kafka's messages."""

from __future__ import annotations

from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.streams.member import JOIN_EPOCH, STATIC_LEAVE_EPOCH
from protocol.streams.messages import StreamsGroupHeartbeatRequest
from protocol.validation import check_types


def _blank(value: str | None) -> bool:
    return value is not None and not value.strip()


def validate_heartbeat(req: StreamsGroupHeartbeatRequest) -> None:
    check_types(req)
    if req.topology is not None and any(s.source_topic_regex
                                        for s in req.topology.subtopologies):
        raise invalid_request("Regular expressions for source topics are not supported yet.")
    if _blank(req.member_id):
        raise invalid_request("MemberId can't be empty.")
    if _blank(req.group_id):
        raise invalid_request("GroupId can't be empty.")
    if _blank(req.instance_id):
        raise invalid_request("InstanceId can't be empty.")
    if _blank(req.rack_id):
        raise invalid_request("RackId can't be empty.")
    epoch = req.member_epoch
    if epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise invalid_request("RebalanceTimeoutMs must be provided in first request.")
        # Kafka's throwIfNotEmptyCollection refuses a null list as well as a non-empty one.
        for name, tasks in (("ActiveTasks", req.active_tasks),
                            ("StandbyTasks", req.standby_tasks),
                            ("WarmupTasks", req.warmup_tasks)):
            if tasks is None or tasks:
                raise invalid_request(f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise invalid_request("Topology must be non-null when (re-)joining.")
        for s in req.topology.subtopologies:
            for t in s.state_changelog_topics:
                if t.partitions != 0:
                    raise CoordinatorError(
                        Errors.STREAMS_INVALID_TOPOLOGY,
                        f"Changelog topic {t.name} must have an undefined partition count, "
                        f"but it is set to {t.partitions}.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise invalid_request("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise invalid_request(f"MemberEpoch is {epoch}, but must be greater than or equal "
                              f"to -2.")
    given = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if any(t is not None for t in given) and any(t is None for t in given):
        raise invalid_request("If one task-type is non-null, all must be non-null.")
    if epoch != JOIN_EPOCH and req.topology is not None:
        raise invalid_request("Topology can only be provided when (re-)joining.")
