"""The INVALID_REQUEST / UNSUPPORTED_ASSIGNOR checks of a ConsumerGroupHeartbeat.

Run before anything else, so a refused heartbeat changes nothing (invariant 6). The list is the
seeds' request-validation rules (seed 004 states them; seed 000 elides the consumer copy),
plus what Kafka 4 adds: a member may bring its own id on join, a temporary static leave needs
an instance id, and a (re)join states its owned partitions as an empty list, never null.
Nothing more: what Kafka 4.4 accepts beyond the seeds' rules (an empty topic name, a later
heartbeat's rebalance timeout of 0, an owned partition below 0) Cohort accepts too
(tests/conformance compares each rule with Kafka's answer).
"""

from __future__ import annotations

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.consumer.member import JOIN_EPOCH, STATIC_LEAVE_EPOCH
from protocol.consumer.regex import InvalidRegex, compile_topic_regex
from protocol.errors import invalid_request
from protocol.modern.validation import check_server_assignor, validate_assignor_list
from protocol.validation import check_types


def validate_heartbeat(req: m.ConsumerGroupHeartbeatRequest, config: CoordinatorConfig) -> None:
    check_types(req)
    if not req.group_id:
        raise invalid_request("GroupId can't be empty.")
    if req.member_epoch < STATIC_LEAVE_EPOCH:
        raise invalid_request(f"MemberEpoch must be >= {STATIC_LEAVE_EPOCH}.")
    if req.member_epoch != JOIN_EPOCH and not req.member_id:
        raise invalid_request("MemberId can't be empty.")
    if req.instance_id is not None and not req.instance_id:
        raise invalid_request("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id:
        raise invalid_request("RackId can't be empty.")
    if req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
        raise invalid_request("InstanceId can't be null when MemberEpoch is -2.")
    if req.member_epoch == JOIN_EPOCH:
        _validate_join(req)
    if req.subscribed_topic_names is not None and req.subscribed_topic_regex is not None:
        raise invalid_request(
            "SubscribedTopicNames and SubscribedTopicRegex cannot be used together."
        )
    if req.subscribed_topic_regex is not None:
        try:
            compile_topic_regex(req.subscribed_topic_regex)
        except InvalidRegex as e:
            raise invalid_request(
                f"SubscribedTopicRegex must be a valid regular expression: {e}"
            ) from None
    validate_assignor_list(req)
    check_server_assignor(req, config.group_consumer_assignors)
    for tp in req.topic_partitions or ():
        if not tp.topic_id:
            raise invalid_request("TopicPartitions.TopicId can't be empty.")


def _validate_join(req: m.ConsumerGroupHeartbeatRequest) -> None:
    if req.rebalance_timeout_ms <= 0:
        raise invalid_request("RebalanceTimeoutMs must be larger than zero in the first heartbeat.")
    if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
        raise invalid_request(
            "SubscribedTopicNames or SubscribedTopicRegex must be set in the first heartbeat."
        )
    if req.topic_partitions is None or req.topic_partitions:
        raise invalid_request("TopicPartitions must be empty when (re-)joining.")
