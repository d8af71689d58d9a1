"""Faults of whole Ray nodes, made from inside the cluster: kill a node, freeze one for a while.

A chaos run only attaches to Ray; it owns no machine. So it reaches a node the way any Ray
program can: a task pinned (hard node affinity) to that node, whose worker is a child of the
node's raylet. ``kill_node`` has it SIGKILL its parent, the raylet: the node's workers follow
and the GCS declares the node dead after its health checks miss (``health_check_*``); on a
real cluster that is the Ray of one machine or pod gone (a KubeRay pod restarts, a launcher
node is replaced by the autoscaler), on one machine it is one raylet of
``ray.cluster_utils.Cluster``. ``pause_node`` has the task start a helper in a session of its
own that SIGSTOPs the raylet and every process under it, sleeps, then SIGCONTs them: a VM
pause or a long stall. Shorter than the health-check window, the node lives on; longer, the
GCS declares it dead, Ray restarts its actors elsewhere, and the resumed raylet exits (its
processes follow) — until then a resumed worker is a zombie only the storage's fence stops.

The head node is never a victim: the GCS and the driver live there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

DEAD_TIMEOUT_S = 120.0
# What the helper runs: stop the raylet and its descendants (not itself), sleep, resume them.
_PAUSE_SCRIPT = """
import os, signal, sys, time
import psutil
raylet = psutil.Process(int(sys.argv[1]))
me = os.getpid()
procs = [raylet] + [p for p in raylet.children(recursive=True) if p.pid != me]
for p in procs:
    try: p.send_signal(signal.SIGSTOP)
    except psutil.Error: pass
time.sleep(float(sys.argv[2]))
for p in procs:
    try: p.send_signal(signal.SIGCONT)
    except psutil.Error: pass
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
def _kill_raylet() -> int:
    raylet = os.getppid()
    os.kill(raylet, signal.SIGKILL)
    return raylet


@ray.remote(num_cpus=0, max_retries=0)
def _pause_raylet(seconds: float) -> int:
    raylet = os.getppid()
    subprocess.Popen([sys.executable, "-c", _PAUSE_SCRIPT, str(raylet), str(seconds)],
                     start_new_session=True, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    return raylet


def _on(node_id: str) -> dict:
    if node_id == head_node_id():
        raise ValueError("the head node (GCS, driver) is never a chaos victim")
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}


def kill_node(node_id: str) -> None:
    """SIGKILL the node's raylet (its workers follow); returns once the task was sent: the
    node is gone when ``wait_dead`` says so. The task's own reply dies with the node."""
    _kill_raylet.options(**_on(node_id)).remote()


def pause_node(node_id: str, seconds: float, timeout_s: float = 30.0) -> int:
    """Freeze the node's raylet and every process under it for ``seconds``; the raylet's pid
    once the helper is started (before it stops anything)."""
    return ray.get(_pause_raylet.options(**_on(node_id)).remote(seconds), timeout=timeout_s)


def wait_dead(node_id: str, timeout_s: float = DEAD_TIMEOUT_S) -> float:
    """Poll the GCS until it declares ``node_id`` dead; the seconds that took."""
    started = time.monotonic()
    while alive(node_id):
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"node {node_id[:8]} still alive after {timeout_s} s")
        time.sleep(0.05)
    return time.monotonic() - started
