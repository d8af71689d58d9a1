"""An unmodified Kafka Streams 4.4 client (``group.protocol=streams``) joins a streams group at
Cohort's gateway in synthetic mode: the coordinator creates the changelog of its state store
and the group becomes stable with every task active on the one member. (Processing itself
needs an upstream: the synthetic stream refuses Produce.)"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from actors.tools.reference_kafka import KafkaJarsMissing, java_binary, kafka_classpath
from protocol.streams import messages as sm

SOURCE = Path(__file__).with_name("streams_join") / "JoinOnly.java"
DEADLINE_S = 120.0


@pytest.fixture
def join_only(tmp_path):
    try:
        classpath = kafka_classpath()
    except KafkaJarsMissing as e:
        pytest.fail(str(e))
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(SOURCE)], check=True,
                   capture_output=True, timeout=120)
    started = []

    def start(bootstrap: str, app_id: str, topic: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [java_binary(), "-Xmx256m", "-cp", f"{tmp_path}:{classpath}", "JoinOnly", bootstrap,
             app_id, topic, str(tmp_path / "state")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=30)


def test_a_kafka_streams_client_joins_and_gets_every_task(cluster, gateway, join_only):
    suffix = uuid.uuid4().hex[:8]
    app, topic = f"streams-join-{suffix}", f"streams-in-{suffix}"
    cluster.create_topic(topic, 2)
    proc = join_only(gateway, app, topic)
    deadline = time.monotonic() + DEADLINE_S
    group = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        (group,) = cluster.call(sm.StreamsGroupDescribeRequest([app])).groups
        if (group.error_code == 0 and group.group_state == "stable" and group.members
                and group.members[0].assignment.active_tasks):
            break
        time.sleep(0.5)
    assert group is not None and group.group_state == "stable", group
    (member,) = group.members
    assert [(t.subtopology_id, sorted(t.partitions)) for t in member.assignment.active_tasks] \
        == [("0", [0, 1])]
    names = {t.name for t in cluster.topics()}
    assert any(n.startswith(app) and n.endswith("-changelog") for n in names), names
