"""A short wire-fuzz run against the session's Cohort (issue 30, invariant 6): fuzzed frames of
every API and version, unauthenticated and logged in with SASL/PLAIN, to the gateway and every
partition's listener, beside idle, slow and oversized sockets. Afterwards every listener still
answers, a real client commits and reads back its offset through each gateway, and no actor
restarted. The long run is ``bench/fuzz.py``."""

from __future__ import annotations

import asyncio

import pytest

from actors.gateway.launch import start_gateway, stop_gateway
from actors.tools import admin_security
from actors.tools.fuzz_checks import actor_processes, commits_and_reads_back, listeners
from actors.tools.fuzz_run import (
    Target,
    answers_api_versions,
    fuzz_listeners,
    idle_sockets,
    oversized_frames,
    slow_sockets,
)
from actors.tools.wire_fuzz import Vocabulary
from protocol.wire.ids import topic_uuid
from tests.gateway.conftest import unique

pytestmark = pytest.mark.ray

NAME = "gateway-fuzz"
USER, PASSWORD = "fuzzer", "fuzzer-secret"
SEED = 30
FRAMES = 600


@pytest.fixture(scope="module")
def sasl_gateway(cluster):
    """A SASL_PLAINTEXT gateway with the authorizer on; the fuzzer's user a super user."""
    admin_security.add_user(USER, PASSWORD)
    bootstrap = start_gateway(cluster.num_partitions, cluster.config, port=0, name=NAME,
                              sasl_mechanisms=["PLAIN"], authorizer=True,
                              super_users=[f"User:{USER}"])
    yield bootstrap
    stop_gateway(NAME)
    admin_security.delete_user(USER)


async def _fuzz(targets: list[Target], vocabulary: Vocabulary) -> dict:
    every = [t for t in targets if t.credentials is None]
    idle = await idle_sockets(every[0].address, 50)
    try:
        slow = asyncio.gather(*(slow_sockets(t.address, 2, seconds=2.0) for t in every))
        oversized = await oversized_frames(every[1].address)
        tallies = await fuzz_listeners(targets, FRAMES, SEED, vocabulary,
                                       max_frame_bytes=64 << 10, workers=2, reply_timeout_s=0.5)
        await slow
    finally:
        for writer in idle:
            writer.close()
    answering = {t.name: await answers_api_versions(t) for t in every}
    return {"tallies": tallies, "oversized": oversized, "answering": answering}


def test_a_seeded_fuzz_run_leaves_every_listener_serving_and_no_actor_restarted(
        cluster, gateway, sasl_gateway):
    topic, check_topic = unique("fuzz-t"), unique("fuzz-check")
    topic_id = cluster.create_topic(topic, 2)
    cluster.create_topic(check_topic, 1)
    before_topics = {t.name for t in cluster.topics()}
    vocabulary = Vocabulary(topics=(topic,), topic_ids=(topic_uuid(topic_id),),
                            groups=(unique("fuzz-g"),))
    plain, sasl = listeners("gateway"), listeners(NAME)
    logged_in = [Target(t.name, t.address, (USER, PASSWORD)) for t in sasl]
    before = actor_processes()
    try:
        run = asyncio.run(_fuzz(plain + sasl + logged_in, vocabulary))
        committed = [
            commits_and_reads_back(gateway, check_topic, unique("fuzz-check"), 42),
            commits_and_reads_back(sasl_gateway, check_topic, unique("fuzz-check"), 43, {
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": USER, "sasl.password": PASSWORD}),
        ]
    finally:  # what the fuzzer created is not left to the session's other tests
        for name in {t.name for t in cluster.topics()} - before_topics:
            cluster.delete_topic(name)
    after = actor_processes()
    tallies = run["tallies"]
    assert sum(t.sent for t in tallies.values()) == FRAMES
    # Every listener served some and refused some (before SASL, only ApiVersions is served).
    assert all(t.closed for t in tallies.values()), tallies
    assert all(t.replied for label, t in tallies.items() if "unauthenticated" not in label
               or not label.startswith(NAME)), tallies
    assert all(run["oversized"].values()), run["oversized"]
    assert all(run["answering"].values()), run["answering"]
    assert committed == [42, 43]
    assert {n: after[n]["restarts"] for n in before} == {
        n: row["restarts"] for n, row in before.items()}
