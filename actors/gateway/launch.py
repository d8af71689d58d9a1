"""Start and stop the gateway actor: what ``cluster.start_gateway`` and ``cohort gateway`` call.

The actor is placed on the node of the process that starts it, so ``127.0.0.1:9092`` from
``start_gateway`` is reachable from that process; it is detached, so it outlives the shell
command that started it, until ``stop_gateway`` (``cohort gateway --stop``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.gateway.actor import GATEWAY_NAME, Gateway
from actors.gateway.core import GatewayOptions
from actors.runtime.controller import NAMESPACE
from protocol.config import CoordinatorConfig
from protocol.security.sasl import MECHANISMS

START_TIMEOUT_S = 60.0


def running_gateway(name: str = GATEWAY_NAME):
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


def _live_gateway(name: str) -> tuple | None:
    """The running gateway and its address; None once none is (a killed one's name takes a
    moment to be released: wait for that, bounded)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while (actor := running_gateway(name)) is not None:
        try:
            return actor, ray.get(actor.address.remote(), timeout=START_TIMEOUT_S)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return None


def start_gateway(num_partitions: int, config: CoordinatorConfig, port: int = 9092,
                  host: str = "127.0.0.1", name: str = GATEWAY_NAME, **options) -> str:
    """Start the gateway (or find the running one on the same port); ``host:port``.

    ``options`` are ``GatewayOptions`` fields: ``sasl_mechanisms``, ``tls_certfile``,
    ``tls_keyfile``, ``authorizer``, ``super_users``, ``max_connections`` (default
    ``actors.gateway.admission.MAX_CONNECTIONS``), ``records_per_s``, ... ``port=0`` picks
    a free port. ``name``: ``gateway`` (the one ``Cluster`` manages) or ``gateway-<x>`` for
    another listener beside it (a SASL or TLS one, say); the controller pushes ACL and user
    changes to each.
    """
    if name != GATEWAY_NAME and not name.startswith(GATEWAY_NAME + "-"):
        raise ValueError(f"a gateway is named {GATEWAY_NAME!r} or {GATEWAY_NAME}-<suffix>")
    known = {f.name for f in dataclasses.fields(GatewayOptions)}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown gateway options {sorted(unknown)}; known: {sorted(known)}")
    for mech in options.get("sasl_mechanisms", ()):
        if mech not in MECHANISMS:
            raise ValueError(f"unknown SASL mechanism {mech!r}; supported: {list(MECHANISMS)}")
    if bool(options.get("tls_certfile")) != bool(options.get("tls_keyfile")):
        raise ValueError("TLS needs both tls_certfile and tls_keyfile")
    base = options.get("coordinator_port", 0)
    if not isinstance(base, int) or not (base == 0 or 1 <= base <= 65535 - num_partitions + 1):
        raise ValueError(f"coordinator_port must be 0 or a port with room for "
                         f"{num_partitions} partitions after it, got {base!r}")
    if options.get("max_connections", 1) < 1:
        raise ValueError(f"max_connections must be at least 1, got {options['max_connections']}")
    existing = _live_gateway(name)
    if existing is not None:
        actor, address = existing
        if port in (0, int(address.rsplit(":", 1)[1])):
            return address
        raise ValueError(f"a gateway is already running at {address}; stop it first")
    opts = GatewayOptions(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in options.items()})
    here = ray.get_runtime_context().get_node_id()
    actor = Gateway.options(
        name=name, namespace=NAMESPACE, lifetime="detached",
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=True),
    ).remote(host, port, num_partitions, config, opts, name)
    try:
        return ray.get(actor.address.remote(), timeout=START_TIMEOUT_S)
    except Exception:
        ray.kill(actor, no_restart=True)
        raise


def stop_gateway(name: str = GATEWAY_NAME) -> bool:
    """Stop the running gateway; False if none was running."""
    actor = running_gateway(name)
    if actor is None:
        return False
    with contextlib.suppress(Exception):  # dead or stuck: killing it is what matters
        ray.get(actor.stop.remote(), timeout=10)
    ray.kill(actor, no_restart=True)
    return True
