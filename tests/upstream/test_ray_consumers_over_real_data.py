"""Ray consumer actors over an upstream's real records: membership on Cohort's KIP-848 path,
records read from the upstream from the committed offset, handed to a function that runs in the
actor, committed (with the member epoch) after it returns. Consumer actors and the group's
coordinator partition are killed mid-run, and nothing is lost."""

from __future__ import annotations

import json
import time
from pathlib import Path

import ray

from actors.tools.invariants_offsets import (
    check_acknowledged_commits,
    check_offsets_monotonic,
    check_stream,
)
from protocol import messages as m
from protocol.wire.record_batches import ConsumerRecord
from tests.gateway.conftest import unique, wait_for
from tests.upstream.test_in_front_of_an_upstream import _produce

PARTITIONS, BEFORE, AFTER = 4, 300, 100


class AppendTo:
    """A consumer's function: each record, as processed, appended to a file that outlives the
    actor (slowly, a few at a time, so that kills land mid-run)."""

    def __init__(self, path: str, pause_s: float = 0.05) -> None:
        self.path, self.pause_s = path, pause_s

    def __call__(self, records: list[ConsumerRecord]) -> None:
        time.sleep(self.pause_s)
        with open(self.path, "a") as f:
            for r in records:
                f.write(json.dumps([r.partition, r.offset, r.key.decode(), r.value.decode(),
                                    r.headers[0][1].decode(), r.timestamp_ms]) + "\n")


def _lines(path: Path) -> list[list]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _events(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for p in paths if p.exists() for line in p.read_text().splitlines()]


def _committed(cohort, group: str, topic: str) -> dict[tuple[str, str, int], int]:
    reply = cohort.call(m.OffsetFetchRequest(group_id=group))
    return {(group, t.name, p.partition_index): p.committed_offset for t in reply.topics
            if t.name == topic for p in t.partitions if p.committed_offset >= 0}


def test_killing_consumer_actors_and_the_coordinator_loses_no_real_record(
        cohort, upstream, tmp_path):
    topic, group = unique("events"), unique("rayg")
    cohort.create_topic(topic, PARTITIONS)
    sent = _produce(upstream.bootstrap, topic, BEFORE, PARTITIONS)
    processed = tmp_path / "processed.jsonl"
    timelines: list[Path] = []

    def spawn():
        timelines.append(tmp_path / f"timeline-{len(timelines)}.jsonl")
        return cohort.spawn_consumer(group, topics=[topic], process=AppendTo(str(processed)),
                                     max_poll_records=5, timeline_path=str(timelines[-1]))

    consumers = [spawn() for _ in range(3)]
    samples = []

    def sample():
        samples.append(_committed(cohort, group, topic))

    wait_for(lambda: (sample(), len(_lines(processed)) >= 60)[1], timeout_s=90)
    assert len(_lines(processed)) < BEFORE  # the kills land mid-run
    ray.kill(consumers.pop(0))  # no goodbye: its partitions come back after its session
    cohort.kill_partition(cohort.partition_for(group))
    consumers.append(spawn())
    sent += _produce(cohort.bootstrap, topic, AFTER, PARTITIONS)
    ends = {(group, topic, p): sum(1 for s in sent if s[0] == p) for p in range(PARTITIONS)}
    try:
        wait_for(lambda: (sample(), samples[-1] == ends)[1], timeout_s=180, every_s=0.3)
    except AssertionError:
        raise AssertionError(f"committed {samples[-1]}, not the ends {ends}; timelines: "
                             f"{[ray.get(c.timeline.remote())[-5:] for c in consumers]}") from None
    timeline = [e for c in consumers for e in ray.get(c.timeline.remote())]
    ray.get([c.stop.remote(leave=True) for c in consumers])

    # Every record processed at least once, whole, with its real offset.
    offsets = {p: 0 for p in range(PARTITIONS)}
    expected = set()
    for p, key, value, headers, ts in sent:
        expected.add((p, offsets[p], key.decode(), value.decode(), headers[0][1].decode(), ts))
        offsets[p] += 1
    seen = {tuple(line) for line in _lines(processed)}
    missing = sorted((r[0], r[1]) for r in expected - seen)
    around = {p: sorted(o for q, o, *_ in seen if q == p) for p in {q for q, _ in missing}}
    steps = [(e["event"], e["partitions"], e.get("from"), e.get("to"), e.get("records"))
             for e in timeline if e["event"] in ("processed", "reset") and
             any(tp[1] in around for tp in e["partitions"])]
    assert seen == expected, (f"not processed (partition, offset): {missing[:40]}; processed "
                              f"offsets there: {around}; committed {samples[-1]}; "
                              f"their steps: {steps}")
    # Committed offsets never went back; each was processed first; what consumers saw
    # acknowledged is still there; processing left no gap.
    events = _events(timelines)
    assert check_offsets_monotonic(samples) == []
    assert check_stream(events, samples[-1]) == []
    assert check_acknowledged_commits(events, samples[-1]) == []
    # The timeline holds real offsets: processed ranges end where the upstream's log ends.
    reached = {}
    for e in timeline:
        if e["event"] == "processed":
            (tp,) = e["partitions"]
            reached[tp[1]] = max(reached.get(tp[1], 0), e["to"])
    assert set(reached.items()) <= {(p, n) for (_, _, p), n in ends.items()} and reached
