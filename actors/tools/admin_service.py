"""``cohort start``, ``cohort stop`` and ``cohort status``: Cohort run as a service on Ray.

Cohort's coordinator is a set of detached, named actors in the ``cohort`` namespace (the
``controller``, ``offsets-<p>``, and a ``gateway`` once one is started), so it lives on the Ray
cluster, not in the process that started it. ``start`` creates them (or finds them running)
and returns; ``stop`` kills them, leaving their logs on disk for the next ``start``; ``status``
reports each one as Ray and the actor itself see it. These functions return plain rows, as the
other admin modules do; ``cli_service`` prints them.

Ray's view (alive, restarting, dead; pid, node, restart count) comes from the GCS actor table;
the actor's own view (loading, active, failed; groups, records, load time) from its ``info``.
A Ray client (``ray://``) cannot read the GCS table itself, so there a zero-CPU task reads it
inside the cluster.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import fields
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from actors.cluster import DEFAULT_PARTITIONS, NOT_RUNNING, Cluster
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE
from actors.runtime.ray_driver import init_ray, wait_released
from actors.runtime.storage_marker import normalize_storage_path
from actors.tools.admin import AdminError, Columns, Row
from actors.upstream.settings import UpstreamSettings
from protocol.config import CoordinatorConfig
from protocol.errors import Errors

GATEWAY_NAME = "gateway"
INFO_TIMEOUT_S = 10.0
DEFAULT_STORAGE = "./cohort-data"
_PARTITION_NAME = re.compile(r"offsets-(\d+)")

STATUS_COLUMNS: Columns = [
    ("ACTOR", "actor"), ("STATE", "state"), ("PID", "pid"), ("NODE", "node"),
    ("GROUPS", "groups"), ("RECORDS", "records"), ("LOAD-SECONDS", "load_seconds"),
    ("RESTARTS", "restarts"),
]
# What each kind of actor reports when it serves (anything else makes ``status`` exit 1).
SERVING = {"controller": "alive", "partition": "active", "gateway": "alive"}


# --------------------------------------------------------------------------- start


def parse_upstream_configs(pairs: list[str]) -> dict[str, str]:
    """``security.protocol=SASL_SSL`` ... -> a dict, each key checked when the upstream's
    settings are parsed (``actors.upstream.settings``)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"--upstream-config {pair!r} is not key=value "
                             "(e.g. security.protocol=SASL_SSL).", Errors.INVALID_CONFIG)
        out[key.strip()] = value
    return out


def parse_broker_configs(pairs: list[str]) -> dict[str, object]:
    """``group.consumer.session.timeout.ms=10000`` -> ``{"group_consumer_session_timeout_ms":
    10000}``: Kafka's broker config keys, as ``CoordinatorConfig`` names its fields, each value
    parsed as its field's type (a list of names is comma-separated, as Kafka writes one)."""
    known = {f.name: f for f in fields(CoordinatorConfig)}
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, name = key.strip(), key.strip().replace(".", "_")
        if not sep or name not in known:
            raise AdminError(f"Unknown broker config '{key}' (expected key=value with one of "
                             "Kafka's group coordinator keys, e.g. "
                             "group.consumer.session.timeout.ms=10000).", Errors.INVALID_CONFIG)
        kind = str(known[name].type)
        if kind == "int":
            try:
                out[name] = int(value)
            except ValueError:
                raise AdminError(f"Broker config {key} must be an integer, got '{value}'.",
                                 Errors.INVALID_CONFIG) from None
        elif kind.startswith("tuple"):
            out[name] = tuple(v.strip() for v in value.split(",") if v.strip())
        else:
            out[name] = value.strip()
    return out


def broker_config(overrides: dict[str, object]) -> CoordinatorConfig:
    """The coordinator's config with ``overrides``; one it refuses is INVALID_CONFIG."""
    try:
        return CoordinatorConfig(**overrides)
    except ValueError as e:
        raise AdminError(f"Invalid broker config: {e}.", Errors.INVALID_CONFIG) from None


def start(address: str | None, partitions: int | None, storage: str | None,
          overrides: dict[str, object], shared_storage: bool = False,
          upstream: str | None = None, upstream_config: dict[str, str] | None = None
          ) -> tuple[Cluster, bool]:
    """Start Cohort's actors on the Ray at ``address`` (never a Ray of its own, which would
    die with the command); return the cluster and whether it was already running.

    A running Cohort is adopted only when every setting given matches it; otherwise the
    refusal says what differs and how to change it (stop, then start).
    """
    try:
        init_ray(address, start_local=False)
    except (ConnectionError, ValueError) as e:
        where = address or "RAY_ADDRESS / the local Ray"
        raise ConnectionError(
            f"no Ray cluster to start Cohort on at {where} ({e}); start one with "
            "`ray start --head`, or pass --address host:port / ray://head:10001"
        ) from None
    config = broker_config(overrides)  # refused before anything is asked of Ray
    running = _running_info()
    if running is not None:
        _refuse_other_settings(running, partitions, storage, overrides)
    if upstream is not None:  # a bad address or setting is refused before anything starts
        upstream = UpstreamSettings.parse(upstream, upstream_config).text
    if running is not None and upstream is not None and running.get("upstream") != upstream:
        raise AdminError(
            f"Cohort is already running on this Ray in front of "
            f"{running.get('upstream') or 'no upstream'}, not {upstream}. Stop it first with "
            "`cohort stop` (its data stays on disk).")
    cluster = Cluster.start(
        num_partitions=partitions if partitions is not None else (
            running["num_partitions"] if running else DEFAULT_PARTITIONS),
        storage_path=storage or DEFAULT_STORAGE,
        config=config,
        start_local=False,
        shared_storage=shared_storage,
        upstream=upstream,
        upstream_config=upstream_config,
    )
    return cluster, running is not None


def _running_info() -> dict | None:
    try:
        controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
    except ValueError:
        return None
    return ray.get(controller.info.remote(), timeout=60)


def _refuse_other_settings(running: dict, partitions: int | None, storage: str | None,
                           overrides: dict[str, object]) -> None:
    differs = []
    if partitions is not None and partitions != running["num_partitions"]:
        differs.append(f"--partitions {running['num_partitions']}, not {partitions}")
    if storage is not None and normalize_storage_path(storage) != running["storage_path"]:
        differs.append(
            f"--storage {running['storage_path']}, not {normalize_storage_path(storage)}")
    config = running["config"]
    for name, value in sorted(overrides.items()):
        if getattr(config, name) != value:
            key = name.replace("_", ".")
            differs.append(f"--config {key}={getattr(config, name)}, not {value}")
    if differs:
        raise AdminError(
            "Cohort is already running on this Ray with other settings ("
            + "; ".join(differs) + "). Stop it first with `cohort stop` (its data stays on "
            "disk), or run `cohort start` without the settings that differ."
        )


def start_rows(cluster: Cluster, adopted: bool) -> Row:
    return {
        "started": not adopted,
        "partitions": cluster.num_partitions,
        "storage_path": cluster.storage_path,
        "upstream": (cluster.upstream() or {}).get("bootstrap"),
        "ray_address": ray_address(),
    }


def ray_address() -> str:
    if ray.util.client.ray.is_connected():
        return "ray client"
    return ray.get_runtime_context().gcs_address


# --------------------------------------------------------------------------- stop


def stop(address: str | None) -> dict[str, Any]:
    """Kill every Cohort actor (controller, partitions, gateway) with no restart, and wait
    until Ray has released their names; the logs stay where they are."""
    _connect_ray(address)
    names = cohort_actor_names()
    if not names:
        raise RuntimeError(f"{NOT_RUNNING}; nothing to stop")
    storage = None
    if CONTROLLER_NAME in names:
        try:
            storage = _running_info()["storage_path"]
        except (GetTimeoutError, RayActorError, TypeError):
            storage = None
    for name in names:
        with contextlib.suppress(ValueError):  # gone already
            ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
    wait_released(names)
    return {"stopped": names, "storage_path": storage}


def cohort_actor_names() -> list[str]:
    """The named Cohort actors Ray knows in namespace ``cohort``: controller first, then the
    partitions in order, then the gateway."""
    named = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == NAMESPACE}
    partitions = sorted((n for n in named if _PARTITION_NAME.fullmatch(n)),
                        key=lambda n: int(n.split("-")[1]))
    return ([CONTROLLER_NAME] if CONTROLLER_NAME in named else []) + partitions + (
        [GATEWAY_NAME] if GATEWAY_NAME in named else [])


def _connect_ray(address: str | None) -> None:
    try:
        init_ray(address, start_local=False)
    except (ConnectionError, ValueError) as e:
        where = address or "RAY_ADDRESS / the local Ray"
        raise ConnectionError(f"cannot connect to Ray at {where}: {e}; start Ray with "
                              "`ray start --head` and Cohort with `cohort start`") from None


# --------------------------------------------------------------------------- status


def status(address: str | None) -> dict[str, Any]:
    """Every Cohort actor as Ray and the actor see it, and whether all of them serve.

    It needs no healthy Cohort: a missing partition (killed for good) or a controller that
    does not answer is a row saying so, not an error."""
    _connect_ray(address)
    named = cohort_actor_names()
    if CONTROLLER_NAME not in named:
        left = f" (left over: {', '.join(named)}; `cohort stop` removes them)" if named else ""
        raise RuntimeError(NOT_RUNNING + left)
    controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
    info = _info(controller.info.remote())
    if info is not None:
        partitions = [f"offsets-{p}" for p in range(info["num_partitions"])]
    else:  # not answering: show the partitions Ray knows of
        partitions = [n for n in named if _PARTITION_NAME.fullmatch(n)]
    names = [CONTROLLER_NAME, *partitions, *([GATEWAY_NAME] if GATEWAY_NAME in named else [])]
    handles = {}
    for name in names:
        with contextlib.suppress(ValueError):  # reported as missing
            handles[name] = ray.get_actor(name, namespace=NAMESPACE)
    table = gcs_rows({name: h._actor_id.hex() for name, h in handles.items()})
    infos = {name: h.info.remote() for name, h in handles.items() if name != CONTROLLER_NAME}
    rows = [
        _status_row(name, table.get(name, {}), info if name == CONTROLLER_NAME else (
            _info(infos[name]) if name in infos else None), present=name in handles)
        for name in names
    ]
    return {
        "ray_address": ray_address(),
        "partitions": len(partitions),
        "storage_path": (info or {}).get("storage_path"),
        "image_version": (info or {}).get("version"),
        "topics": (info or {}).get("topics"),
        "upstream": _upstream_status(controller) if (info or {}).get("upstream") else None,
        "serving": all(r["serving"] for r in rows),
        "actors": rows,
    }


def _upstream_status(controller) -> dict | None:
    """The upstream as the controller last read it (reachable, brokers, topics seen)."""
    try:
        return ray.get(controller.upstream_status.remote(), timeout=10)
    except (GetTimeoutError, RayActorError) as e:
        return {"reachable": False, "error": f"the controller did not answer: {e}"}


def _info(ref) -> dict | None:
    try:
        info = ray.get(ref, timeout=INFO_TIMEOUT_S)
    except (GetTimeoutError, RayActorError, AttributeError):
        return None
    return info if isinstance(info, dict) else None


def _status_row(name: str, gcs: dict, info: dict | None, present: bool) -> Row:
    kind = ("controller" if name == CONTROLLER_NAME else
            "gateway" if name == GATEWAY_NAME else "partition")
    ray_state = gcs.get("State") or "DEAD"
    address = gcs.get("Address") or {}
    if not present:
        state = "missing"
    elif ray_state != "ALIVE":
        state = ray_state.lower()
    elif info is None:
        state = "unresponsive"
    else:
        state = info.get("state", "alive") if kind == "partition" else "alive"
    load = (info or {}).get("load") or {}
    row = {
        "actor": name,
        "kind": kind,
        "state": state,
        "serving": state == SERVING[kind],
        "pid": gcs.get("Pid") or (info or {}).get("pid"),
        "node": address.get("IPAddress"),
        "node_id": address.get("NodeID"),
        "restarts": gcs.get("NumRestarts"),
        "groups": (info or {}).get("groups") if kind == "partition" else None,
        "records": (info or {}).get("records", load.get("records")) if kind == "partition"
        else None,
        "load_seconds": round(load["seconds"], 3) if "seconds" in load else None,
    }
    if (info or {}).get("refusal"):  # a storage refused for good (actors/runtime/storage_marker)
        row["refusal"] = info["refusal"]
    if kind == "controller" and info:
        row.update(image_version=info.get("version"), topics=info.get("topics"),
                   group_configs=info.get("group_configs"))
    if kind == "gateway" and info:
        row["info"] = info
    return row


def gcs_rows(actor_ids: dict[str, str]) -> dict[str, dict]:
    """Ray's actor table rows (state, pid, node, restarts) by actor name. A Ray client has no
    GCS connection of its own: a zero-CPU task reads them inside the cluster."""
    if ray.util.client.ray.is_connected():
        return ray.get(_gcs_rows_task.remote(actor_ids), timeout=60)
    return _gcs_rows(actor_ids)


def _gcs_rows(actor_ids: dict[str, str]) -> dict[str, dict]:
    from ray._private import state  # Ray's own reader of the GCS actor table

    rows = {name: state.actors(actor_id=actor_id) for name, actor_id in actor_ids.items()}
    # Only plain fields: the row's death cause is a protobuf message, which does not pickle.
    return {name: {k: row.get(k) for k in ("State", "Pid", "NumRestarts", "Address")}
            for name, row in rows.items()}


_gcs_rows_task = ray.remote(num_cpus=0)(_gcs_rows)
