"""Waiting on consumer actors, shared by the Ray tests."""

from __future__ import annotations

import time

import ray


def eventually(predicate, timeout_s: float = 60.0, every_s: float = 0.2):
    """Poll ``predicate`` until it returns something truthy (returned), or fail the test."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(every_s)


def owned(consumers) -> list[list[tuple[str, int]]]:
    """Each consumer actor's assignment, as (topic, partition) tuples."""
    return [[tuple(tp) for tp in a] for a in ray.get([c.assignment.remote() for c in consumers])]


def wait_whole(consumers, partitions: int, timeout_s: float = 90.0) -> None:
    """Wait until the consumers together own each of ``partitions`` partitions exactly once."""

    def whole() -> bool:
        got = [tp for s in owned(consumers) for tp in s]
        return len(got) == partitions and len(set(got)) == partitions

    eventually(whole, timeout_s)
