"""``cohort configs``: a group's dynamic configs, as ``kafka-configs.sh --entity-type groups``.

Group configs live in the controller, not in the group (settable before it exists, kept after
it is deleted), and Kafka names them with dots (``consumer.session.timeout.ms``) where
``GroupConfig`` has fields; this module owns that mapping and checks every change against it
before anything is sent, leaving the broker's bounds to the controller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from actors.tools.admin import AdminError, Columns, Row
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import CoordinatorError, Errors

CONFIG_COLUMNS: Columns = [
    ("GROUP", "group"), ("CONFIG", "name"), ("VALUE", "value"), ("SOURCE", "source"),
]


def config_names() -> dict[str, str]:
    """Kafka's group config names -> ``GroupConfig`` fields (``consumer.session.timeout.ms``
    -> ``consumer_session_timeout_ms``)."""
    return {f.name.replace("_", "."): f.name for f in dataclasses.fields(GroupConfig)}


def describe_configs(group_id: str, current: GroupConfig, broker: CoordinatorConfig,
                     include_defaults: bool = False) -> list[Row]:
    """The group's dynamic configs (and, with ``include_defaults``, the broker defaults the
    others fall back to), as ``kafka-configs --describe [--all]`` lists them."""
    rows = []
    for name, field_name in config_names().items():
        value = getattr(current, field_name)
        if value is not None:
            rows.append({"group": group_id, "name": name, "value": value,
                         "source": "DYNAMIC_GROUP_CONFIG"})
        elif include_defaults:
            rows.append({"group": group_id, "name": name,
                         "value": getattr(broker, f"group_{field_name}", None),
                         "source": "DEFAULT_CONFIG"})
    return rows


def parse_config_pairs(text: str) -> dict[str, str]:
    """``k=v,k=v`` as ``--add-config`` takes it."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"Bad config '{item}': use name=value.", Errors.INVALID_CONFIG)
        out[key.strip()] = value.strip()
    return out


def altered_config(current: GroupConfig, add: dict[str, str], delete: Iterable[str]) -> GroupConfig:
    """``current`` with ``add`` set and ``delete`` back to the broker default; unknown names
    and non-integer values are refused (INVALID_CONFIG) before anything is sent."""
    names = config_names()
    changes: dict[str, int | None] = {}
    for key in [*add, *delete]:
        if key not in names:
            raise AdminError(
                f"Unknown group config name: {key} (known: {', '.join(sorted(names))}).",
                Errors.INVALID_CONFIG,
            )
    for key, value in add.items():
        try:
            changes[names[key]] = int(value)
        except ValueError:
            raise AdminError(f"Invalid value {value} for configuration {key}: not an integer.",
                             Errors.INVALID_CONFIG) from None
    for key in delete:
        changes[names[key]] = None
    return dataclasses.replace(current, **changes)


def alter_configs(cluster, group_id: str, add: dict[str, str],
                  delete: Iterable[str]) -> GroupConfig:
    """Read, change, write the group's dynamic config; the controller validates the result
    against the broker's bounds (INVALID_CONFIG). Group configs need no existing group."""
    new = altered_config(group_config(cluster, group_id), add, list(delete))
    try:
        cluster.set_group_config(group_id, **dataclasses.asdict(new))
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None
    return new


def group_config(cluster, group_id: str) -> GroupConfig:
    import ray

    from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE

    controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
    return ray.get(controller.group_config.remote(group_id))
