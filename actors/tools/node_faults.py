"""Faults of whole Ray nodes, made from inside the cluster: kill a node, freeze one for a while.

A chaos run only attaches to Ray; it owns no machine. So it reaches a node the way any Ray
program can: a task pinned (hard node affinity) to that node, whose worker is a child of the
node's raylet. Both faults run a helper in a session of its own (so that it outlives the task's
worker) that signals the raylet and every process under it. ``kill_node`` SIGKILLs them all:
the death of a machine (measured here: a worker whose raylet alone is SIGKILLed keeps running,
reparented, and its actors keep calling out although the GCS lists them DEAD, so killing the
raylet alone is not a node's death); the GCS declares the node dead after its health checks
miss (``health_check_*``). On a real cluster that is the Ray of one machine or pod gone (a
KubeRay pod restarts, a launcher node is replaced by the autoscaler); on one machine it is one
raylet of ``ray.cluster_utils.Cluster``. ``pause_node`` SIGSTOPs them, sleeps, then SIGCONTs
them: a VM pause or a long stall. Shorter than the health-check window, the node lives on;
longer, the GCS declares it dead, Ray restarts its actors elsewhere, and the resumed raylet
exits (its processes follow) — until then a resumed worker is a zombie only the storage's
fence stops.

The head node is never a victim: the GCS and the driver live there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

DEAD_TIMEOUT_S = 120.0
# What the helper runs: signal the raylet and its descendants (not itself) with SIGKILL, or
# with SIGSTOP and, ``seconds`` later, SIGCONT.
_SCRIPT = """
import os, signal, sys, time
import psutil
raylet = psutil.Process(int(sys.argv[1]))
me = os.getpid()
procs = [raylet] + [p for p in raylet.children(recursive=True) if p.pid != me]
def send(sig):
    for p in procs:
        try: p.send_signal(sig)
        except psutil.Error: pass
if sys.argv[2] == "kill":
    send(signal.SIGKILL)
else:
    send(signal.SIGSTOP)
    time.sleep(float(sys.argv[2]))
    send(signal.SIGCONT)
"""


def head_node_id() -> str:
    """The node of the GCS (the head): the one a chaos run never kills."""
    gcs_host = ray.get_runtime_context().gcs_address.rsplit(":", 1)[0]
    heads = [n["NodeID"] for n in ray.nodes()
             if n["Alive"] and n.get("Resources", {}).get("node:__internal_head__")]
    if heads:
        return heads[0]
    return next(n["NodeID"] for n in ray.nodes()
                if n["Alive"] and n["NodeManagerAddress"] == gcs_host)


def alive(node_id: str) -> bool:
    return any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes())


@ray.remote(num_cpus=0, max_retries=0)
def _signal_node(how: str) -> int:
    """Start the helper against this worker's parent, the raylet; return the raylet's pid."""
    raylet = os.getppid()
    subprocess.Popen([sys.executable, "-c", _SCRIPT, str(raylet), how],
                     start_new_session=True, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    return raylet


def _on(node_id: str) -> dict:
    if node_id == head_node_id():
        raise ValueError("the head node (GCS, driver) is never a chaos victim")
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}


def kill_node(node_id: str, timeout_s: float = 30.0) -> int | None:
    """SIGKILL the node's raylet and every process under it; the raylet's pid once the helper
    is started (None when the node died before the task's reply left it). The node is gone
    when ``wait_dead`` says so."""
    try:
        return ray.get(_signal_node.options(**_on(node_id)).remote("kill"), timeout=timeout_s)
    except ray.exceptions.RayError:
        return None


def pause_node(node_id: str, seconds: float, timeout_s: float = 30.0) -> int:
    """Freeze the node's raylet and every process under it for ``seconds``; the raylet's pid
    once the helper is started (before it stops anything)."""
    return ray.get(_signal_node.options(**_on(node_id)).remote(str(seconds)),
                   timeout=timeout_s)


def wait_dead(node_id: str, timeout_s: float = DEAD_TIMEOUT_S) -> float:
    """Poll the GCS until it declares ``node_id`` dead; the seconds that took."""
    started = time.monotonic()
    while alive(node_id):
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"node {node_id[:8]} still alive after {timeout_s} s")
        time.sleep(0.05)
    return time.monotonic() - started
