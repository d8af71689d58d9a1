"""What a fuzz run is judged by: Cohort's listeners and processes, the event loops' longest
stall, the processes' peak memory, and a real client's commit afterwards.

A listener's loop is its process's only loop (a gateway's, or a partition actor's, whose turns
run there too), so a stall anywhere in it delays an ApiVersions round trip: the ``Probe`` times
one to every listener every 10 ms, from a process of its own (the fuzzer's own loop, busy
making frames, would otherwise count its stalls as the listeners'), and samples the actors'
resident memory meanwhile. A round trip also waits for the machine to schedule the actor, so
each actor reports its loop's stalls itself too (``loop_stalls``: the CPU its loop's thread
spent in one go, which a busy machine does not inflate). Restarts are Ray's count for each
named actor (its GCS row), the same ``cohort status`` shows.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import psutil
import ray

from actors.runtime.controller import NAMESPACE
from actors.tools.admin_service import gcs_rows
from actors.tools.fuzz_run import API_VERSIONS_V0, Target

PROBE_INTERVAL_S = 0.01
RSS_INTERVAL_S = 0.05


def listeners(gateway: str, credentials: tuple[str, str] | None = None) -> list[Target]:
    """The gateway named ``gateway`` and each partition's listener for its clients."""
    actor = ray.get_actor(gateway, namespace=NAMESPACE)
    out = [Target(gateway, ray.get(actor.address.remote(), timeout=60), credentials)]
    coordinators = ray.get(actor.coordinators.remote(), timeout=60)
    out += [Target(f"{gateway} offsets-{p}", address, credentials)
            for p, address in sorted(coordinators.items())]
    return out


def actor_processes() -> dict[str, dict]:
    """Every named Cohort actor (controller, partitions, gateways): its pid and Ray's count of
    its restarts."""
    names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                   if a["namespace"] == NAMESPACE)
    ids = {n: ray.get_actor(n, namespace=NAMESPACE)._actor_id.hex() for n in names}
    return {n: {"pid": row.get("Pid"), "restarts": row.get("NumRestarts") or 0}
            for n, row in gcs_rows(ids).items()}


def _ask_each(names: list[str], method: str, *args: object) -> dict[str, object]:
    """``method(*args)`` of each named actor, asked of all at once."""
    refs = {n: getattr(ray.get_actor(n, namespace=NAMESPACE), method).remote(*args)
            for n in names}
    return {n: ray.get(ref, timeout=120) for n, ref in refs.items()}


def loop_stalls(names: list[str], reset: bool = True) -> dict[str, dict]:
    """Each listening actor's (partitions', gateways') longest event-loop stalls since the last
    reading (``actors.runtime.loop_watch``): ``late_ms``, ``busy_ms``, ``gc_ms``, ``stacks``."""
    return _ask_each(names, "loop_stalls", reset)


def heap_censuses(names: list[str], top: int = 6) -> dict[str, dict]:
    """Each listening actor's tracked objects and their commonest types
    (``LoopWatch.census``)."""
    return _ask_each(names, "heap_census", top)


def rss_bytes(pids: dict[str, int]) -> dict[str, int]:
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.Error):
            out[name] = psutil.Process(pid).memory_info().rss
    return out


def commits_and_reads_back(bootstrap: str, topic: str, group: str, offset: int,
                           config: dict | None = None) -> int | str:
    """A real client (confluent-kafka) commits ``offset`` for partition 0 of ``topic`` and
    reads it back: the offset read, or the client's error."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "log_level": 0, **(config or {})})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        return tp.offset
    except KafkaException as e:
        return str(e)
    finally:
        consumer.close()


def census(bootstrap: str) -> str:
    """What a run left behind, as a client sees it: topics, their partitions and groups (a
    fuzzer's CreateTopics and joins make them; what grows, the processes' memory follows)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    topics = admin.list_topics(timeout=60).topics
    groups = admin.list_consumer_groups(request_timeout=60).result()
    partitions = sum(len(t.partitions) for t in topics.values())
    return f"{len(topics):,} topics, {partitions:,} partitions, {len(groups.valid):,} groups"


# ------------------------------------------------------------------------------- probe


@dataclass
class ProbeResult:
    """Per listener: the longest ApiVersions round trip (ms), round trips, failed ones; per
    process: the largest resident memory sampled (bytes)."""

    longest_ms: dict[str, float] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    peak_rss: dict[str, int] = field(default_factory=dict)


class Probe:
    """Times ApiVersions round trips to ``targets`` (unauthenticated: ApiVersions is served
    before SASL) and samples ``pids``' memory, in a process of its own, from ``start`` to
    ``stop``."""

    def __init__(self, targets: list[Target], pids: dict[str, int]) -> None:
        self._args = ({t.name: t.address for t in targets}, pids)
        self._pipe, self._process = None, None

    def start(self) -> Probe:
        ctx = multiprocessing.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._process = ctx.Process(target=_probe_main, args=(child, *self._args), daemon=True)
        self._process.start()
        assert self._pipe.recv() == "ready"
        return self

    def stop(self) -> ProbeResult:
        self._pipe.send("stop")
        result = self._pipe.recv()
        self._process.join(10)
        return result


def _probe_main(pipe, addresses: dict[str, str], pids: dict[str, int]) -> None:
    result, done = ProbeResult(), threading.Event()
    connected = threading.Barrier(len(addresses) + 1)
    threads = [threading.Thread(target=_time_round_trips,
                                args=(name, address, result, done, connected))
               for name, address in addresses.items()]
    threads.append(threading.Thread(target=_sample_rss, args=(pids, result, done)))
    for t in threads:
        t.start()
    # Ready once every listener answered a first time: its connection holds a slot before
    # any attack can fill the listener.
    with contextlib.suppress(threading.BrokenBarrierError):
        connected.wait(timeout=60)
    pipe.send("ready")
    pipe.recv()
    done.set()
    for t in threads:
        t.join(30)
    pipe.send(result)


def _time_round_trips(name: str, address: str, result: ProbeResult, done: threading.Event,
                      connected: threading.Barrier) -> None:
    host, port = address.rsplit(":", 1)
    result.longest_ms[name], result.rounds[name], result.failures[name] = 0.0, 0, 0
    sock, waiting = None, True
    while not done.is_set():
        if waiting and result.rounds[name]:
            waiting = False
            with contextlib.suppress(threading.BrokenBarrierError):
                connected.wait(timeout=60)
        started = time.perf_counter()
        try:
            if sock is None:
                sock = socket.create_connection((host, int(port)), timeout=30)
            sock.sendall(API_VERSIONS_V0)
            _read_frame(sock)
        except OSError:
            result.failures[name] += 1
            with contextlib.suppress(OSError):
                sock is not None and sock.close()
            sock = None
            done.wait(0.1)
            continue
        took_ms = (time.perf_counter() - started) * 1000
        result.longest_ms[name] = max(result.longest_ms[name], took_ms)
        result.rounds[name] += 1
        done.wait(PROBE_INTERVAL_S)
    if sock is not None:
        sock.close()


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    return exactly(struct.unpack(">i", exactly(4))[0])


def _sample_rss(pids: dict[str, int], result: ProbeResult, done: threading.Event) -> None:
    while not done.is_set():
        for name, rss in rss_bytes(pids).items():
            result.peak_rss[name] = max(result.peak_rss.get(name, 0), rss)
        done.wait(RSS_INTERVAL_S)
