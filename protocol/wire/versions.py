"""Which Kafka APIs the gateway speaks, at which versions: the one table ApiVersions reports.

Each row is an API key, the versions served (within what kio, the codec, knows) and its name.
Ranges start where Kafka 4.x's brokers start, except where an older client this project tests
(aiokafka, kafka-python) still speaks an older version that kio can decode. Produce is listed
because clients refuse a broker that lacks it; it is answered with an error (``stream``).
Whatever is not here is an unknown API: the connection that sent it is closed, as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiRange:
    api_key: int
    min_version: int
    max_version: int
    name: str


# fmt: off
SUPPORTED: dict[int, ApiRange] = {r.api_key: r for r in (
    ApiRange(0,  3, 11, "Produce"),
    ApiRange(1,  4, 12, "Fetch"),
    ApiRange(2,  1, 9,  "ListOffsets"),
    ApiRange(3,  0, 12, "Metadata"),
    ApiRange(8,  2, 9,  "OffsetCommit"),
    ApiRange(9,  1, 9,  "OffsetFetch"),
    ApiRange(10, 0, 6,  "FindCoordinator"),
    ApiRange(11, 0, 9,  "JoinGroup"),
    ApiRange(12, 0, 4,  "Heartbeat"),
    ApiRange(13, 0, 5,  "LeaveGroup"),
    ApiRange(14, 0, 5,  "SyncGroup"),
    ApiRange(15, 0, 5,  "DescribeGroups"),
    ApiRange(16, 0, 5,  "ListGroups"),
    ApiRange(17, 1, 1,  "SaslHandshake"),
    ApiRange(18, 0, 4,  "ApiVersions"),
    ApiRange(19, 2, 7,  "CreateTopics"),
    ApiRange(20, 1, 6,  "DeleteTopics"),
    ApiRange(32, 1, 4,  "DescribeConfigs"),
    ApiRange(36, 0, 2,  "SaslAuthenticate"),
    ApiRange(37, 0, 3,  "CreatePartitions"),
    ApiRange(42, 0, 2,  "DeleteGroups"),
    ApiRange(44, 0, 1,  "IncrementalAlterConfigs"),
    ApiRange(47, 0, 0,  "OffsetDelete"),
    ApiRange(68, 0, 1,  "ConsumerGroupHeartbeat"),
    ApiRange(69, 0, 1,  "ConsumerGroupDescribe"),
)}
# fmt: on

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
PRODUCE = 0
# What a connection may send before it has authenticated (Kafka's SASL rule).
BEFORE_AUTHENTICATION = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


def supports(api_key: int, version: int) -> bool:
    r = SUPPORTED.get(api_key)
    return r is not None and r.min_version <= version <= r.max_version


def api_name(api_key: int) -> str:
    r = SUPPORTED.get(api_key)
    return r.name if r is not None else f"api-{api_key}"


def api_versions_body(error_code: int = 0) -> dict:
    """ApiVersions' reply (any version): every row, and KIP-848's ``group.version`` feature
    (clients of the new protocol look for it)."""
    return {
        "error_code": error_code,
        "api_keys": [
            {"api_key": r.api_key, "min_version": r.min_version, "max_version": r.max_version}
            for r in SUPPORTED.values()
        ],
        "throttle_time": 0,
        "supported_features": [{"name": "group.version", "min_version": 0, "max_version": 1}],
        "finalized_features_epoch": 0,
        "finalized_features": [
            {"name": "group.version", "min_version_level": 1, "max_version_level": 1}
        ],
    }
