"""Kafka's error codes, by their protocol numbers.

The numbers are Kafka's (``org.apache.kafka.common.protocol.Errors``) so that anyone who knows
Kafka reads a Cohort reply at once. Two codes exist only in the seeds' design
(``COMPUTE_ASSIGNMENT`` for Connect and ``INVALID_ASSIGNMENT`` for client-side assignors);
Kafka never shipped them, so they live above Kafka's range, from 10001 on, where no Kafka
number will ever collide with them.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    INVALID_TOPIC_EXCEPTION = 17
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_REGULAR_EXPRESSION = 128
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    # The seeds' own codes, never shipped by Kafka: numbered above Kafka's range.
    COMPUTE_ASSIGNMENT = 10001
    INVALID_ASSIGNMENT = 10002


# The coordinator is loading, moving or down: the same request may be sent again later (to the
# partition the group hashes to). Clients retry these; nothing about the group is wrong.
COORDINATOR_UNAVAILABLE = frozenset(
    {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS}
)


class CoordinatorError(Exception):
    """A request was refused: carries the Kafka error code and a message for the reply.

    Raised inside ``protocol/`` handlers *before* any record is produced, so a refused request
    changes nothing; the shard turns it into the response's ``error_code``/``error_message``.
    """

    def __init__(self, error: Errors, message: str | None = None) -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error
        self.message = message

    def __reduce__(self):
        # Crosses process boundaries (Ray pickles exceptions): keep the code, not just text.
        return (type(self), (self.error, self.message))


def invalid_request(message: str) -> CoordinatorError:
    return CoordinatorError(Errors.INVALID_REQUEST, message)
