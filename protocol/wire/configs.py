"""DescribeConfigs and IncrementalAlterConfigs for group configs (KIP-848's GROUP resource).

Group configs are the controller's ``GroupConfig`` (settable before the group exists, kept
after it is deleted); on the wire they are Kafka's dotted names. Describe lists each with its
effective value, marked GROUP_CONFIG when the group overrides it, STATIC_BROKER_CONFIG when
the broker's own setting (``CoordinatorConfig``) applies and differs from Kafka's default, and
DEFAULT_CONFIG otherwise; with synonyms asked for, each carries them as Kafka 4.4 lists them:
the group's override, the broker's setting (``group.<name>``), the default. Alter takes SET
and DELETE; the list operations (APPEND, SUBTRACT) do not apply to integer configs and are
refused with INVALID_CONFIG, as Kafka refuses them. Topics have no configs here (described as
an empty list); broker configs likewise. ListConfigResources lists what has configs.
"""

from __future__ import annotations

import dataclasses

from kio.schema.errors import ErrorCode as E

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.wire.topics import TopicIndex

# ConfigResource.Type
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# What ListConfigResources v1 lists when asked for no type in particular, and v0's one type.
LISTED_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)
# DescribeConfigsResponse.ConfigSource
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 4, 5, 8
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
                   keys: list[str] | None, include_synonyms: bool = False) -> dict:
    configs = []
    defaults = CoordinatorConfig()
    for key, field_name in config_names().items():
        if keys is not None and key not in keys:
            continue
        broker_key = key if key in _NO_BROKER_CONFIG else f"group.{key}"
        broker_value = getattr(broker, f"group_{field_name}")
        default_value = getattr(defaults, f"group_{field_name}")
        synonyms = [_synonym(broker_key, default_value, DEFAULT_CONFIG)]
        if broker_value != default_value:
            synonyms.insert(0, _synonym(broker_key, broker_value, STATIC_BROKER_CONFIG))
        value = getattr(current, field_name)
        if value is not None:
            synonyms.insert(0, _synonym(key, value, GROUP_CONFIG))
        configs.append({"name": key, "value": synonyms[0]["value"], "read_only": False,
                        "config_source": synonyms[0]["source"], "is_sensitive": False,
                        "synonyms": synonyms if include_synonyms else [],
                        "config_type": _config_type(field_name), "documentation": None})
    return _result(GROUP, name, configs=configs)


def _synonym(name: str, value: object, source: int) -> dict:
    return {"name": name, "value": str(value), "source": source}


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
            raise ConfigRefused(E.invalid_config, f"Unknown group config name: {key}")
        if kind == DELETE:
            changes[names[key]] = None
        elif kind == SET and names[key] in _STRING_FIELDS:  # share.auto.offset.reset
            changes[names[key]] = op.get("value") or ""
        elif kind == SET:
            try:
                changes[names[key]] = int(op.get("value") or "")
            except ValueError:
                raise ConfigRefused(
                    E.invalid_config, f"Invalid value {op.get('value')} for configuration "
                    f"{key}: Not a number of type INT") from None
        else:
            raise ConfigRefused(E.invalid_config,
                                f"{key} is not a list config: APPEND/SUBTRACT do not apply.")
    try:
        return dataclasses.replace(current, **changes)
    except ValueError as e:  # GroupConfig's own check (a string config's values)
        raise ConfigRefused(E.invalid_config, str(e)) from None


# Group configs whose values are strings (the rest are ints).
_STRING_FIELDS = frozenset({"share_auto_offset_reset"})
# Group configs with no broker setting in Kafka: their default is named by the group key.
_NO_BROKER_CONFIG = frozenset({"share.auto.offset.reset"})


def _config_type(field_name: str) -> int:
    return CONFIG_TYPE_STRING if field_name in _STRING_FIELDS else CONFIG_TYPE_INT


def listed_types(asked: list[int] | None, version: int) -> tuple[int, ...] | None:
    """The resource types a ListConfigResources lists: v0 only client metrics; v1 those
    asked, each once (Kafka asks whether a type is among them, so a type named twice lists its
    resources once: issue 30's fuzzer named TOPIC thousands of times, a reply of every topic
    as often, 37 of the gateway's longest stall's 39 samples), or all when none are; None when
    one asked is not a config resource type (Kafka answers UNSUPPORTED_VERSION)."""
    if version == 0:
        return (CLIENT_METRICS,)
    if not asked:
        return LISTED_TYPES
    once = tuple(dict.fromkeys(asked))
    return once if all(t in LISTED_TYPES for t in once) else None


def list_resources(types: tuple[int, ...], topics: list[str], brokers: list[str],
                   groups: list[str]) -> dict:
    """ListConfigResources' reply: the resources of each type in ``types``."""
    names = {TOPIC: topics, BROKER: brokers, BROKER_LOGGER: brokers, CLIENT_METRICS: [],
             GROUP: groups}
    resources = [{"resource_name": name, "resource_type": rtype}
                 for rtype in types for name in names[rtype]]
    return {"throttle_time": 0, "error_code": E.none.value, "config_resources": resources}


def list_resources_refused(error: E) -> dict:
    return {"throttle_time": 0, "error_code": error.value, "config_resources": []}


def alter_result(rtype: int, name: str, error: E = E.none, message: str | None = None) -> dict:
    return {"error_code": error.value, "error_message": message, "resource_type": rtype,
            "resource_name": name}
