"""Many KIP-848 confluent-kafka consumers of one group, spread over worker processes.

One process cannot hold 1,000 confluent-kafka consumers: each takes a thread-local-storage key
of the process (``PTHREAD_KEYS_MAX`` is 1,024 on Linux), and the 1,000th fails with
"Failed to initialize thread local storage". So a fleet is several processes of at most
``PER_PROCESS`` consumers (a thread each), started and ready before the clock starts: every
consumer is created first, then all subscribe at once when the parent says go, and the parent
follows each member's assignment through a queue.

``time_to_stable`` is the benchmarks' one definition of a stable group (as ``bench/wire.py``'s):
every partition of the topic owned by exactly one member and no member owning more than its fair
share (the uniform assignor's ceiling), as the members' own rebalance callbacks say. With at
least as many partitions as members that means every member has joined and owns its share; with
fewer, the first member to join would own them all, so size the topic to the group.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time

PER_PROCESS = 250
QUIET = {"log_level": 0}


def _members(bootstrap: str, topic: str, group: str, first: int, count: int,
             extra: dict, ready, go, done, events) -> None:
    import threading

    from confluent_kafka import Consumer

    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "group.protocol": "consumer", **QUIET, **extra})
                 for _ in range(count)]
    ready.put(count)
    go.wait()

    def work(i: int, c) -> None:
        def assigned(_c, parts):
            events.put((i, 1, [p.partition for p in parts]))

        def revoked(_c, parts):
            events.put((i, -1, [p.partition for p in parts]))

        c.subscribe([topic], on_assign=assigned, on_revoke=revoked)
        while not done.is_set():
            c.poll(0.5)  # a rebalance event wakes it at once
        c.close()

    threads = [threading.Thread(target=work, args=(first + k, c), daemon=True)
               for k, c in enumerate(consumers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


def time_to_stable(bootstrap: str, topic: str, members: int, partitions: int,
                   timeout_s: float = 300.0, extra: dict | None = None) -> float:
    """Seconds from the moment every consumer subscribes until each of ``partitions`` is owned
    by exactly one member (NaN after ``timeout_s``)."""
    ctx = mp.get_context("spawn")
    ready, events = ctx.Queue(), ctx.Queue()
    go, done = ctx.Event(), ctx.Event()
    group = f"fleet-{time.time_ns()}"
    procs = []
    for first in range(0, members, PER_PROCESS):
        count = min(PER_PROCESS, members - first)
        procs.append(ctx.Process(target=_members, daemon=True, args=(
            bootstrap, topic, group, first, count, extra or {}, ready, go, done, events)))
    for p in procs:
        p.start()
    created = 0
    deadline = time.monotonic() + timeout_s
    while created < members:
        created += ready.get(timeout=max(1.0, deadline - time.monotonic()))
    owned: dict[int, set[int]] = {}
    fair_share = -(-partitions // members)
    t0 = time.perf_counter()
    go.set()
    elapsed = float("nan")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            i, sign, parts = events.get(timeout=0.05)
        except queue.Empty:
            continue
        mine = owned.setdefault(i, set())
        if sign > 0:
            mine |= set(parts)
        else:
            mine -= set(parts)
        counts = [p for s in owned.values() for p in s]
        most = max(len(s) for s in owned.values())
        if len(counts) == partitions == len(set(counts)) and most <= fair_share:
            elapsed = time.perf_counter() - t0
            break
    done.set()
    for p in procs:
        p.join(90)
        if p.is_alive():
            p.kill()
    return elapsed
