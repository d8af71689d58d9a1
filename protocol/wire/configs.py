"""DescribeConfigs and IncrementalAlterConfigs for group configs (KIP-848's GROUP resource).

Group configs are the controller's ``GroupConfig`` (settable before the group exists, kept
after it is deleted); on the wire they are Kafka's dotted names. Describe lists each with its
effective value, marked GROUP_CONFIG when the group overrides it, STATIC_BROKER_CONFIG when the
broker's value applies and was set (differs from Kafka's default, as a ``server.properties``
line would), DEFAULT_CONFIG otherwise. Alter takes SET and DELETE; the list operations (APPEND,
SUBTRACT) do not apply to integer configs and are refused with INVALID_CONFIG, as Kafka
refuses them.
Topics have no configs here (described as an empty list); broker configs likewise.
"""

from __future__ import annotations

import dataclasses

from kio.schema.errors import ErrorCode as E

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.wire.topics import TopicIndex

# ConfigResource.Type
TOPIC, BROKER, GROUP = 2, 4, 32
# DescribeConfigsResponse.ConfigSource
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 4, 5, 8
_KAFKA_DEFAULTS = CoordinatorConfig()
# ConfigDef.Type STRING and INT as DescribeConfigs v3+ reports them
CONFIG_TYPE_STRING = 2
CONFIG_TYPE_INT = 3
# AlterConfigOp.OpType
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class ConfigRefused(Exception):
    def __init__(self, error: E, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def config_names() -> dict[str, str]:
    """Kafka's group config names -> ``GroupConfig`` fields."""
    return {f.name.replace("_", "."): f.name for f in dataclasses.fields(GroupConfig)}


def describe_group(name: str, current: GroupConfig, broker: CoordinatorConfig,
                   keys: list[str] | None) -> dict:
    configs = []
    for key, field_name in config_names().items():
        if keys is not None and key not in keys:
            continue
        value = getattr(current, field_name)
        source = GROUP_CONFIG
        if value is None:
            key_name = f"group_{field_name}"
            value = getattr(broker, key_name)
            set_here = value != getattr(_KAFKA_DEFAULTS, key_name)
            source = STATIC_BROKER_CONFIG if set_here else DEFAULT_CONFIG
        configs.append({"name": key, "value": str(value), "read_only": False,
                        "config_source": source, "is_sensitive": False, "synonyms": [],
                        "config_type": _config_type(field_name), "documentation": None})
    return _result(GROUP, name, configs=configs)


def describe_other(resource: dict, index: TopicIndex) -> dict:
    rtype, name = resource["resource_type"], resource["resource_name"]
    if rtype == TOPIC and index.partitions(name) is None:
        return _result(rtype, name, E.unknown_topic_or_partition, f"Topic {name} is unknown.")
    if rtype in (TOPIC, BROKER):
        return _result(rtype, name)
    return _result(rtype, name, E.invalid_request,
                   f"Cohort describes group, topic and broker configs only (type {rtype}).")


def refused(rtype: int, name: str, error: E, message: str | None) -> dict:
    return _result(rtype, name, error, message)


def _result(rtype: int, name: str, error: E = E.none, message: str | None = None,
            configs: list | None = None) -> dict:
    return {"error_code": error.value, "error_message": message, "resource_type": rtype,
            "resource_name": name, "configs": configs or []}


def altered_group_config(current: GroupConfig, ops: list[dict]) -> GroupConfig:
    """``current`` with ``ops`` applied; ``ConfigRefused`` for an unknown name, a bad value
    or a list operation. Bounds are the controller's to check."""
    names = config_names()
    changes: dict[str, int | None] = {}
    for op in ops:
        key, kind = op["name"], op["config_operation"]
        if key not in names:
            raise ConfigRefused(E.invalid_config, f"Unknown group config name: {key}.")
        if kind == DELETE:
            changes[names[key]] = None
        elif kind == SET and names[key] in _STRING_FIELDS:  # share.auto.offset.reset
            changes[names[key]] = op.get("value") or ""
        elif kind == SET:
            try:
                changes[names[key]] = int(op.get("value") or "")
            except ValueError:
                raise ConfigRefused(E.invalid_config,
                                    f"Invalid value {op.get('value')} for {key}.") from None
        else:
            raise ConfigRefused(E.invalid_config,
                                f"{key} is not a list config: APPEND/SUBTRACT do not apply.")
    try:
        return dataclasses.replace(current, **changes)
    except ValueError as e:  # GroupConfig's own check (a string config's values)
        raise ConfigRefused(E.invalid_config, str(e)) from None


# Group configs whose values are strings (the rest are ints).
_STRING_FIELDS = frozenset({"share_auto_offset_reset"})


def _config_type(field_name: str) -> int:
    return CONFIG_TYPE_STRING if field_name in _STRING_FIELDS else CONFIG_TYPE_INT


def alter_result(rtype: int, name: str, error: E = E.none, message: str | None = None) -> dict:
    return {"error_code": error.value, "error_message": message, "resource_type": rtype,
            "resource_name": name}
