"""What ApiVersions reports and the codec admits, read off the one API table (``protocol.api``).

The rows of ``protocol.api.BY_API_KEY`` are the APIs Kafka's wire carries, each with the
versions the gateway serves; nothing else is listed here, so ApiVersions advertises exactly
the rows and a key that is not a row is an unknown API (the connection that sent it is closed,
as Kafka does). The keys below are those the connection itself treats specially.
"""

from __future__ import annotations

from protocol.api import BY_API_KEY

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
PRODUCE = 0
# What a connection may send before it has authenticated (Kafka's SASL rule).
BEFORE_AUTHENTICATION = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


def served(api_key: int) -> bool:
    """Whether ``api_key`` is a row the gateway serves (at some version)."""
    return api_key in BY_API_KEY


def supports(api_key: int, version: int) -> bool:
    api = BY_API_KEY.get(api_key)
    return api is not None and api.versions.min <= version <= api.versions.max


def api_name(api_key: int) -> str:
    api = BY_API_KEY.get(api_key)
    return api.name if api is not None else f"api-{api_key}"


def api_versions_body(error_code: int = 0) -> dict:
    """ApiVersions' reply (any version): every row, and KIP-848's ``group.version`` feature
    (clients of the new protocol look for it)."""
    return {
        "error_code": error_code,
        "api_keys": [
            {"api_key": key, "min_version": api.versions.min, "max_version": api.versions.max}
            for key, api in sorted(BY_API_KEY.items())
        ],
        "throttle_time": 0,
        "supported_features": [{"name": "group.version", "min_version": 0, "max_version": 1}],
        "finalized_features_epoch": 0,
        "finalized_features": [
            {"name": "group.version", "min_version_level": 1, "max_version_level": 1}
        ],
    }
