"""The whole ``Cluster`` API works from a Ray client (``ray://``), as from a laptop.

A Ray client server is started against the session's Ray (the ``cluster`` fixture), and a
child process that has nothing but ``ray://127.0.0.1:<port>`` and the token file drives a
consumer group through topics, configs, a coordinator kill and a topic deletion. It prints
what it saw as JSON; the assertions are here. ``Cluster.connect`` switches a Ray client to
token mode by itself when a token exists (the last test checks that).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import ray

from protocol.errors import Errors
from tests.actors.tools.cli_helpers import cohort

pytestmark = pytest.mark.ray

SERVER_START_TIMEOUT_S = 60.0
CHILD_TIMEOUT_S = 150.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def ray_client_server(gcs_address: str) -> Iterator[str]:
    """A Ray client server (legacy mode: one driver for all clients) on the running Ray.

    Yields its ``ray://`` URL; the server's log is shown if it does not come up.
    """
    port = free_port()
    with tempfile.TemporaryFile("w+") as server_log:
        server = subprocess.Popen(
            [sys.executable, "-m", "ray.util.client.server", "--address", gcs_address,
             "--host", "127.0.0.1", "--port", str(port), "--mode", "legacy"],
            stdout=server_log, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        server_log.seek(0)
                        pytest.fail(f"the Ray client server did not start:\n"
                                    f"{server_log.read()[-3000:]}")
                    time.sleep(0.1)
            yield f"ray://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)


CHILD = textwrap.dedent(
    """
    import json, sys, time
    import ray
    from actors.cluster import Cluster
    from protocol import messages as m
    from protocol.errors import CoordinatorError

    url, prefix = sys.argv[1], sys.argv[2]
    a, b, g = f"{prefix}-a", f"{prefix}-b", f"{prefix}-g"
    out = {"create_again": None, "bad_config": None}

    def owned(group):
        return sorted([tp.topic_name, p] for mem in group.members
                      for tp in mem.assignment.topic_partitions for p in tp.partitions)

    def until(what, check, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        while True:
            value = what()
            if check(value) or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    c = Cluster.connect(url)
    out["client_mode"] = ray.util.client.ray.is_connected()
    out["num_partitions"] = c.num_partitions

    # Topics.
    out["topic_id"] = c.create_topic(a, 4)
    c.create_topic(b, 2)
    try:
        c.create_topic(a, 4)
    except CoordinatorError as e:
        out["create_again"] = e.error.name
    c.add_partitions(a, 6)
    out["topics"] = {t.name: t.num_partitions for t in c.topics() if t.name.startswith(prefix)}

    # Dynamic group config, set before the group exists; a bad one is refused.
    c.set_group_config(g, consumer_session_timeout_ms=20_000, consumer_heartbeat_interval_ms=250)
    try:
        c.set_group_config(g, consumer_session_timeout_ms=1)
    except CoordinatorError as e:
        out["bad_config"] = e.error.name
    cfg = ray.get(c._controller.group_config.remote(g))
    out["group_config"] = [cfg.consumer_session_timeout_ms, cfg.consumer_heartbeat_interval_ms]

    # A consumer group: one single-member actor, one actor hosting two members.
    one = c.spawn_consumer(g, topics=[a, b], protocol="consumer")
    two = c.spawn_consumers(g, 2, topics=[a, b], protocol="consumer")
    stable = c.wait_stable(g, members=3)
    out["stable"] = {"epoch": stable.group_epoch, "owned": owned(stable)}
    clients = until(lambda: [ray.get(h.assignment.remote()) for h in (one, two)],
                    lambda got: sum(map(len, got)) == 8)
    out["client_assignments"] = clients
    out["listed"] = [[x.group_id, x.group_state, x.group_type] for x in c.list_groups()
                     if x.group_id == g]
    resp = c.call(m.ConsumerGroupDescribeRequest(group_ids=[g]))
    out["call"] = [type(resp).__name__, resp.groups[0].error_code, resp.groups[0].group_epoch,
                   len(resp.groups[0].members)]

    # Chaos: kill the group's coordinator; Ray restarts it, it reloads its log.
    # ray.kill returns before the actor is dead, so wait for the new process to answer.
    def info():
        try:
            return ray.get(c.coordinator(g).info.remote(), timeout=10)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return None

    p = c.partition_for(g)
    before = info()
    c.kill_partition(p)
    after = until(info, lambda i: i is not None and i["pid"] != before["pid"]
                  and i["state"] == "active", timeout_s=60.0) or {"pid": None, "state": None}
    after_kill = c.wait_stable(g, members=3)
    out["kill"] = {"partition": p, "pid_before": before["pid"], "pid_after": after["pid"],
                   "state_after": after["state"], "epoch": after_kill.group_epoch,
                   "owned": owned(after_kill)}

    # Deleting a subscribed topic moves the group to a new epoch without its partitions.
    c.delete_topic(b)
    shrunk = until(lambda: c.wait_stable(g, members=3),
                   lambda grp: all(t == a for t, _ in owned(grp)))
    out["after_delete"] = {"epoch": shrunk.group_epoch, "owned": owned(shrunk),
                           "topics": sorted(t.name for t in c.topics()
                                            if t.name.startswith(prefix))}

    # Timelines, then everyone leaves.
    out["timelines"] = [ray.get(h.timeline.remote()) for h in (one, two)]
    ray.get([h.stop.remote(leave=True) for h in (one, two)])
    gone = until(lambda: c.describe(g), lambda grp: not grp.members)
    out["after_stop"] = [gone.group_state, len(gone.members)]
    c.delete_topic(a)
    print("RESULT " + json.dumps(out))
    """
)


def _run_child(url: str, prefix: str) -> dict:
    # As on a laptop: only the token file (~/.ray/auth_token, written when the session's
    # Ray started); Cluster.connect puts the Ray client in token mode itself.
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    done = subprocess.run([sys.executable, "-c", CHILD, url, prefix], capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT_S, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, done.stdout[-2000:]
    return json.loads(lines[0].removeprefix("RESULT "))


def _exactly_once(owned: list[list], expected: dict[str, int]) -> None:
    counts = Counter((t, p) for t, p in owned)
    every = {(t, p) for t, n in expected.items() for p in range(n)}
    assert set(counts) == every, f"owned {sorted(counts)}, expected {sorted(every)}"
    assert all(n == 1 for n in counts.values()), counts


def test_a_ray_client_drives_topics_configs_a_group_and_a_coordinator_kill(cluster):
    prefix = "ray-client"
    with ray_client_server(ray.get_runtime_context().gcs_address) as url:
        out = _run_child(url, prefix)
        # cohort status reads Ray's actor table through a task inside the cluster.
        status = cohort("status", "--json", address=url)
    a, b, g = f"{prefix}-a", f"{prefix}-b", f"{prefix}-g"

    assert out["client_mode"] is True
    assert out["num_partitions"] == cluster.num_partitions
    # Topics: created, refused twice, grown, listed.
    assert isinstance(out["topic_id"], str) and out["topic_id"]
    assert out["create_again"] == Errors.TOPIC_ALREADY_EXISTS.name
    assert out["topics"] == {a: 6, b: 2}
    # Config round-trips; a refusal arrives as the CoordinatorError it is.
    assert out["group_config"] == [20_000, 250]
    assert out["bad_config"] == Errors.INVALID_CONFIG.name
    # The group: three members own all 8 partitions exactly once, as the members see it too.
    _exactly_once(out["stable"]["owned"], {a: 6, b: 2})
    _exactly_once([tp for got in out["client_assignments"] for tp in got], {a: 6, b: 2})
    assert len(out["client_assignments"][0]) >= 2 and len(out["client_assignments"][1]) >= 4
    assert out["listed"] == [[g, "stable", "consumer"]]
    assert out["call"] == ["ConsumerGroupDescribeResponse", 0, out["stable"]["epoch"], 3]
    # The kill: a new process, loaded, the same group at the same epoch.
    kill = out["kill"]
    assert kill["partition"] == cluster.partition_for(g)
    assert kill["pid_after"] != kill["pid_before"]
    assert kill["state_after"] == "active"
    assert kill["epoch"] == out["stable"]["epoch"]
    _exactly_once(kill["owned"], {a: 6, b: 2})
    # Deleting b: a new epoch, a's partitions still owned exactly once.
    after = out["after_delete"]
    assert after["epoch"] > kill["epoch"]
    _exactly_once(after["owned"], {a: 6})
    assert after["topics"] == [a]
    # Timelines: each actor was assigned partitions; the single member's epochs never go down.
    for timeline in out["timelines"]:
        assert any(e["event"] == "assigned" and e["partitions"] for e in timeline)
    epochs = [e["epoch"] for e in out["timelines"][0]]
    assert epochs == sorted(epochs)
    # Everyone left.
    assert out["after_stop"] == ["empty", 0]
    # The session's own driver sees what the Ray client did.
    assert not {a, b} & {t.name for t in cluster.topics()}
    assert cluster.describe(g).group_state == "empty"
    assert status.returncode == 0, status.stderr[-3000:]
    report = json.loads(status.stdout)
    assert report["serving"] is True
    rows = {r["actor"]: r for r in report["actors"]}
    assert rows[f"offsets-{kill['partition']}"]["pid"] == kill["pid_after"]
    assert rows[f"offsets-{kill['partition']}"]["restarts"] >= 1


TOKEN_MODE_PROBE = textwrap.dedent(
    """
    import ray
    from ray._raylet import AuthenticationMode, get_authentication_mode
    import actors.runtime.ray_driver as driver

    seen = []
    ray.init = lambda *args, **kwargs: seen.append(
        get_authentication_mode() == AuthenticationMode.TOKEN)
    driver._probe = lambda target: None  # nothing listens there: skip the probe
    driver.init_ray("ray://127.0.0.1:1", start_local=False)
    print("token mode at ray.init:", seen)
    """
)


def test_connect_puts_a_ray_client_in_token_mode_when_a_token_exists():
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env["RAY_AUTH_TOKEN"] = "0123456789abcdef0123456789abcdef"
    done = subprocess.run([sys.executable, "-c", TOKEN_MODE_PROBE], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "token mode at ray.init: [True]" in done.stdout.splitlines()
