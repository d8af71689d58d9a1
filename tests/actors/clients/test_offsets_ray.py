"""Consumers commit as they process; the next owner of a partition resumes where the last
commit left it (invariant 5), through a killed consumer and a killed coordinator."""

from __future__ import annotations

import time

import pytest
import ray

from actors.tools.chaos import _read_timeline
from actors.tools.invariants_offsets import check_offsets_monotonic, check_stream
from protocol import messages as m
from tests.actors.ray_helpers import eventually, owned, wait_whole
from tests.actors.runtime.test_partition import wait_restarted

pytestmark = pytest.mark.ray


def committed(cluster, group: str) -> dict[tuple[str, str, int], int]:
    resp = cluster.call(m.OffsetFetchRequest(group_id=group))
    assert resp.error_code == 0, resp
    return {(group, t.name, p.partition_index): p.committed_offset
            for t in resp.topics for p in t.partitions}


def test_a_killed_consumers_partitions_resume_from_its_last_commit(cluster, tmp_path):
    topic, group = "resume", "resume-g"
    cluster.create_topic(topic, 4)
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    a, b = (cluster.spawn_consumer(group, [topic], timeline_path=str(p)) for p in paths)
    # Both members hold their share (the group can be whole while ``a`` still holds all four,
    # before ``b`` gets any), and ``b`` has processed and committed each of its partitions:
    # the kill below must find commits of ``b``'s to resume from.
    eventually(lambda: [len(s) for s in owned([a, b])] == [2, 2], timeout_s=90)
    victims = {tuple(tp) for tp in ray.get(b.assignment.remote())}

    def b_committed_all() -> bool:
        done = {tuple(e["partitions"][0]) for e in _read_timeline(paths[1])
                if e["event"] == "committed"}
        return victims <= done and len({k for k, v in committed(cluster, group).items()
                                        if v > 0}) == 4

    eventually(b_committed_all, timeout_s=60)
    assert {tuple(tp) for tp in ray.get(b.assignment.remote())} == victims  # nothing moved
    samples = [committed(cluster, group)]
    b_id = ray.get(b.members.remote())[0]["member_id"]
    ray.kill(b)  # mid-stream: no leave, no last commit
    killed_at = time.monotonic()
    wait_whole([a], 4, timeout_s=60)

    def a_resumed_all() -> bool:
        """The new owner processed and committed each of b's partitions since the kill."""
        since = [e for e in _read_timeline(paths[0]) if e["t"] > killed_at]
        for kind in ("processed", "committed"):
            if not victims <= {tuple(e["partitions"][0]) for e in since if e["event"] == kind}:
                return False
        return True

    eventually(a_resumed_all, timeout_s=60)
    samples.append(committed(cluster, group))
    # The coordinator dies too: the commits are in its log.
    p = cluster.partition_for(group)
    old_pid = ray.get(cluster.partition(p).info.remote())["pid"]
    cluster.kill_partition(p)
    wait_restarted(cluster, p, old_pid)
    samples.append(committed(cluster, group))
    ray.get(a.stop.remote(leave=True))
    final = committed(cluster, group)
    samples.append(final)

    events = [e for path in paths for e in _read_timeline(path)]
    last_commit_of_b = {}
    for e in events:
        if e["event"] == "committed" and e["t"] <= killed_at:
            (tp,) = e["partitions"]
            if tuple(tp) in victims:
                last_commit_of_b[tuple(tp)] = max(last_commit_of_b.get(tuple(tp), 0), e["offset"])
    a_id = next(e["member_id"] for e in _read_timeline(paths[0]))
    for tp in victims:
        def processed_by(member, after=0.0, tp=tp):
            return [(e["from"], e["to"]) for e in events if e["event"] == "processed"
                    and tuple(e["partitions"][0]) == tp and e["member_id"] == member
                    and e["t"] > after]

        b_reach = max(hi for _, hi in processed_by(b_id))
        starts = [lo for lo, _ in processed_by(a_id, killed_at)]
        assert starts, f"{tp} was never processed by its new owner"
        # From b's last commit (one b sent but never saw acknowledged may be later, never
        # past what b had processed): nothing skipped, little redone.
        assert last_commit_of_b[tp] <= min(starts) <= b_reach, (tp, starts, last_commit_of_b)
    assert check_stream(events, final) == []
    assert check_offsets_monotonic(samples) == []
    assert all(final[(group, topic, q)] > 0 for q in range(4))
