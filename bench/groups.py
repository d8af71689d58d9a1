"""Cohort's group coordinator against Apache Kafka 4.4's, the same clients and scenarios on
each, one run (issue 29).

Systems (``--systems``), all started once at the beginning and left idle between scenarios:

- **cohort**: a local Ray, ``Cluster.start`` (durable log, fsync on) and its gateway; its topics
  are synthetic streams, here growing at 0 records/s for the group scenarios (a fetch finds
  nothing and waits, as on an empty Kafka topic) and at ``--share-rate`` per partition on a
  second gateway for the share scenario;
- **kafka**: Apache Kafka 4.4.0 (``actors.tools.reference_kafka``: one KRaft node, the heap and
  GC of Kafka's own start script), as it ships but for the KIP-848 heartbeat interval every
  system is given.

Crabka (the Rust reimplementation of Kafka, issue 29's third peer) is not among them: it is not
on crates.io (its names there are retired stubs) and its repository's build did not finish on
this machine in the time given to it (bench/README.md, "Crabka").

Clients (``--clients``): **librdkafka** (confluent-kafka, this process, a thread per consumer)
and **java** (Kafka 4.4's ``KafkaConsumer`` with ``group.protocol=consumer`` and
``KafkaShareConsumer``, all in one JVM, a thread per consumer: ``actors.tools.java_clients``).

Scenarios, each run on every system in turn (the first system alternates from scenario to
scenario), each with a fresh group:

1. **stable N** (``--sizes``): N KIP-848 consumers subscribe to a topic of N partitions; the
   time from the moment they all subscribe (librdkafka: every consumer built, the threads
   released together; Java: every consumer built, ``together=true``'s ``subscribing`` event)
   until the group is *stable*: the assignments the client has handed the application
   (librdkafka's ``on_assign`` / ``on_revoke``, Java's ``onPartitionsAssigned`` /
   ``onPartitionsRevoked`` / ``onPartitionsLost``, both incremental) are disjoint, cover every
   partition, and give each live member ⌊P/M⌋ or ⌈P/M⌉ partitions: with P = N, exactly one
   each, so every member has joined and been told its assignment. The same test on every
   system, evaluated after every callback.
2. **leave / join** (``--churn-size`` members, ``--rounds``): from a stable group, one member
   closes (leaving the group; its partitions are counted unowned from that moment) and the
   time until the others are stable again (N partitions over N-1 members: one or two each) is
   taken; then a new member subscribes and the time until the N are stable (one each) is taken.
   Medians over the rounds.
3. **share** (``--share-consumers`` consumers, ``--share-records``): share consumers in explicit
   acknowledgement mode accept every record and commit (``commit_sync``; Java ``commitSync``)
   after each poll; records acknowledged per second from the first delivery to the
   ``--share-records``-th distinct record whose acknowledgement the broker confirmed. Kafka
   stores records, so they are produced before the consumers start (not timed);
   Cohort's synthetic stream already holds them. The group starts at the earliest offset
   (``share.auto.offset.reset=earliest``, set through IncrementalAlterConfigs on every
   system). So the comparison is the share-fetch and acknowledgement path, not production.

It prints each figure as it comes, then one table with the ratios Cohort/Kafka beside the
issue's goals (1,000 consumers stable in no more than Kafka's time; share acknowledgements/s
at least 1.0x Kafka's). The machine is shared: compare the ratios of one run.

    .venv/bin/python bench/groups.py [--quick] [--sizes 10,100,1000]
        [--clients librdkafka,java] [--systems cohort,kafka] [--heartbeat-ms 500]
        [--scenarios stable,churn,share]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from actors.tools.share_scenario import ShareConsumers as RdkafkaShareConsumers
from actors.tools.stable_group import Owners

QUIET = {"log_level": 0}
READY_TIMEOUT_S = 120.0
# Kafka's own kafka-server-start.sh and kafka-run-class.sh: a 1 GiB heap and G1, as it ships
# (ReferenceKafka's default is a smaller heap for tests).
KAFKA_JVM_OPTIONS = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                     "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                     "-Djava.awt.headless=true")
# A thousand consumers (two threads each, their metrics and buffers) in one driver JVM.
JAVA_CLIENT_JVM_OPTIONS = ("-Xmx2g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                           "-Djava.awt.headless=true")
# Connections per listener on Cohort's gateway: a thousand consumers hold one or two each there
# (Kafka's max.connections is unbounded by default).
MAX_CONNECTIONS = 100_000
SHARE_PARTITIONS = 3


# ------------------------------------------------------------------------------ systems


@dataclass
class System:
    """A system under test: where its group scenarios and its share scenario connect, how to
    make a topic, and how to give a share topic its records (a no-op on Cohort's stream)."""

    name: str
    bootstrap: str
    share_bootstrap: str
    create_topic: Callable[[str, int], None]
    fill_share_topic: Callable[[str, int, int], None]


def _admin_topic(bootstrap: str) -> Callable[[str, int], None]:
    def create(name: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(READY_TIMEOUT_S)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            meta = admin.list_topics(name, timeout=30).topics.get(name)
            if meta is not None and meta.error is None and len(meta.partitions) == partitions \
                    and all(p.leader >= 0 for p in meta.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} never showed its {partitions} partitions' leaders")
            time.sleep(0.2)
    return create


def _produce(bootstrap: str) -> Callable[[str, int, int], None]:
    def fill(topic: str, partitions: int, records: int) -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, **QUIET})
        failed: list[str] = []
        for n in range(records):
            while True:
                try:
                    p.produce(topic, str(n).encode(), partition=n % partitions,
                              on_delivery=lambda err, _m: err and failed.append(str(err)))
                    break
                except BufferError:
                    p.poll(0.01)
        if p.flush(READY_TIMEOUT_S) or failed:
            raise RuntimeError(f"records not produced: {failed[:1]}")
    return fill


@contextlib.contextmanager
def cohort(args: argparse.Namespace) -> Iterator[System]:
    # Ray's workers run at nice 15 unless told otherwise (scripts/env.sh): here they get this
    # script's niceness, as Kafka's JVM does.
    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")  # scripts/env.sh
    import ray

    from actors.cluster import Cluster
    from actors.gateway.launch import start_gateway, stop_gateway
    from protocol.config import CoordinatorConfig

    floor = args.heartbeat_ms if args.kafka_intervals else min(args.heartbeat_ms, 50)
    config = CoordinatorConfig(group_consumer_heartbeat_interval_ms=args.heartbeat_ms,
                               group_consumer_min_heartbeat_interval_ms=floor,
                               group_initial_rebalance_delay_ms=0)
    ray.init(address="local", namespace="cohort", include_dashboard=False, log_to_driver=False)
    data = tempfile.mkdtemp(prefix="bench-groups-")
    cluster = Cluster.start(num_partitions=args.coordinator_partitions, storage_path=data,
                            config=config)
    try:
        bootstrap = cluster.start_gateway(port=0, records_per_s=0.0,
                                          max_connections=MAX_CONNECTIONS)
        share = start_gateway(cluster.num_partitions, cluster.config, port=0,
                              name="gateway-share", records_per_s=args.share_rate,
                              batch_interval_ms=50, max_connections=MAX_CONNECTIONS)
        yield System("cohort", bootstrap, share,
                     lambda name, n: cluster.create_topic(name, n), lambda *_: None)
    finally:
        with contextlib.suppress(Exception):
            stop_gateway("gateway-share")
        cluster.shutdown()
        ray.shutdown()
        shutil.rmtree(data, ignore_errors=True)


@contextlib.contextmanager
def kafka(args: argparse.Namespace) -> Iterator[System]:
    from actors.tools.reference_kafka import ReferenceKafka

    config = {"group.consumer.heartbeat.interval.ms": args.heartbeat_ms,
              "group.consumer.min.heartbeat.interval.ms": min(args.heartbeat_ms, 1000)}
    with ReferenceKafka(config=config, jvm_options=KAFKA_JVM_OPTIONS) as broker:
        yield System("kafka", broker.bootstrap, broker.bootstrap,
                     _admin_topic(broker.bootstrap), _produce(broker.bootstrap))


STARTERS = {"cohort": cohort, "kafka": kafka}


def set_share_earliest(bootstrap: str, group: str) -> None:
    """``share.auto.offset.reset=earliest`` for ``group`` (IncrementalAlterConfigs), before
    any member joins: the records are already there on every system."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(READY_TIMEOUT_S)


# ------------------------------------------------------------------------------ clients


class RdkafkaGroup:
    """KIP-848 consumers of one group in this process, a thread each, polling every 50 ms
    (which serves their rebalance callbacks) until stopped."""

    def __init__(self, bootstrap: str, topic: str, group: str, owners: Owners) -> None:
        self.bootstrap, self.topic, self.group, self.owners = bootstrap, topic, group, owners
        self._members: dict[int, tuple[Consumer, threading.Event, threading.Thread]] = {}
        self._next = 0

    def build(self, n: int) -> list[int]:
        """Build ``n`` consumers (not subscribed yet); their member keys."""
        keys = []
        for _ in range(n):
            key, self._next = self._next, self._next + 1
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                          "group.protocol": "consumer", "enable.auto.commit": False,
                          "client.id": f"{self.group}-{key}", **QUIET})
            self._members[key] = (c, threading.Event(), None)  # type: ignore[assignment]
            keys.append(key)
        return keys

    def start(self, keys: list[int]) -> float:
        """Subscribe ``keys`` together (threads released at once); the moment released."""
        gate = threading.Barrier(len(keys) + 1)
        for key in keys:
            c, stop, _ = self._members[key]
            t = threading.Thread(target=self._run, args=(key, c, stop, gate), daemon=True)
            self._members[key] = (c, stop, t)
            t.start()
        gate.wait()
        return time.perf_counter()

    def _run(self, key: int, c: Consumer, stop: threading.Event,
             gate: threading.Barrier) -> None:
        owners = self.owners
        gate.wait()
        c.subscribe([self.topic],
                    on_assign=lambda _c, ps: owners.add(key, [p.partition for p in ps]),
                    on_revoke=lambda _c, ps: owners.remove(key, [p.partition for p in ps]))
        while not stop.is_set():
            c.poll(0.05)
        c.close()

    def leave(self, key: int) -> None:
        """Ask ``key``'s thread to close its consumer (it leaves the group); returns at once."""
        self._members[key][1].set()

    def close(self) -> None:
        for _, stop, _ in self._members.values():
            stop.set()
        for _, _, t in self._members.values():
            if t is not None:
                t.join(120)


# confluent-kafka takes a pthread key per client and a process has 1,024 ("Failed to initialize
# thread local storage" at the thousandth): a bigger group lives in child processes of this
# many consumers each, which report their callbacks to this one.
HOST_CONSUMERS = 400
# A host's consumers poll this long at a time: a rebalance callback is served the moment
# librdkafka queues it, whatever the timeout, so a shorter poll only burns the CPU that the
# system under test shares with 1,000 polling threads (both systems alike).
HOST_POLL_S = 1.0


def _host(bootstrap: str, topic: str, group: str, keys: list[int], events: object,
          control: object) -> None:
    """A child process's consumers (``RdkafkaHosts``): built, then subscribed on "go", each
    polling in its own thread; every callback sent to the parent as (kind, key, partitions).

    The process starts a session of its own, so the kernel's autogroup scheduler (on in most
    Linux distributions) weighs the clients as one group against the system under test. The
    reference broker's JVM runs in a session of its own (``ReferenceKafka``); Cohort's Ray runs
    in this benchmark's. Clients left in the benchmark's session shared Cohort's group thread
    by thread: one coordinator thread against thousands of librdkafka threads, while Kafka's
    JVM had a whole group's share to itself."""
    os.setsid()
    consumers = {k: Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "group.protocol": "consumer", "enable.auto.commit": False,
                              "client.id": f"{group}-{k}", **QUIET}) for k in keys}
    stop = threading.Event()

    def run(key: int, c: Consumer) -> None:
        c.subscribe([topic],
                    on_assign=lambda _c, ps: events.put(("add", key, [p.partition for p in ps])),
                    on_revoke=lambda _c, ps: events.put(("remove", key,
                                                         [p.partition for p in ps])))
        while not stop.is_set():
            c.poll(HOST_POLL_S)
        c.close()

    events.put(("built", None, None))
    control.recv()  # "go"
    threads = [threading.Thread(target=run, args=(k, c), daemon=True)
               for k, c in consumers.items()]
    for th in threads:
        th.start()
    control.recv()  # "close"
    stop.set()
    for th in threads:
        th.join(120)


class RdkafkaHosts:
    """``RdkafkaGroup``'s stable scenario for a group too big for one process: child processes
    (spawned, so no Ray or client state is inherited) of ``HOST_CONSUMERS`` consumers each,
    built before the clock; "go" goes to all of them at once."""

    def __init__(self, bootstrap: str, topic: str, group: str, owners: Owners,
                 size: int, timeout_s: float) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._events = ctx.Queue()
        self._owners = owners
        self._built = threading.Semaphore(0)
        self._hosts = []
        keys = list(range(size))
        for i in range(0, size, HOST_CONSUMERS):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_host, args=(bootstrap, topic, group,
                                                   keys[i:i + HOST_CONSUMERS], self._events,
                                                   child), daemon=True)
            proc.start()
            self._hosts.append((proc, parent))
        self.keys = keys
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        for _ in self._hosts:
            if not self._built.acquire(timeout=timeout_s):
                raise TimeoutError(f"{size} librdkafka consumers not built in {timeout_s} s")

    def _read(self) -> None:
        while True:
            kind, key, parts = self._events.get()
            if kind == "built":
                self._built.release()
            elif kind == "add":
                self._owners.add(key, parts)
            elif kind == "remove":
                self._owners.remove(key, parts)
            elif kind == "end":
                return

    @property
    def pids(self) -> list[int]:
        """The host processes' pids (their consumers' threads are the clients' CPU)."""
        return [proc.pid for proc, _ in self._hosts]

    def start(self) -> float:
        t0 = time.perf_counter()
        for _, conn in self._hosts:
            conn.send("go")
        return t0

    def close(self) -> None:
        for _, conn in self._hosts:
            with contextlib.suppress(OSError):
                conn.send("close")
        for proc, _ in self._hosts:
            proc.join(180)
            if proc.is_alive():
                proc.kill()
        self._events.put(("end", None, None))
        self._reader.join(30)


class JavaGroup:
    """KIP-848 KafkaConsumers of one group in the driver JVM, one ``consume`` command per
    batch of members (a batch leaves together: the leaver is a batch of one)."""

    def __init__(self, java: object, bootstrap: str, topic: str, group: str,
                 owners: Owners) -> None:
        self.java, self.bootstrap, self.topic, self.group = java, bootstrap, topic, group
        self.owners = owners
        self._commands: dict[str, object] = {}

    def start(self, n: int, timeout_s: float) -> tuple[list[tuple[str, int]], float]:
        """Start ``n`` consumers (built first, then subscribed together); their member keys
        and the moment the driver reported them subscribing (as this process read it)."""
        subscribing = threading.Event()
        at: list[float] = []
        owners = self.owners

        def listener(event: dict) -> None:
            kind = event["event"]
            if kind == "subscribing":
                at.append(time.perf_counter())
                subscribing.set()
            elif kind in ("assigned", "revoked", "lost"):
                parts = [int(p.rsplit("-", 1)[1]) for p in event["partitions"]]
                key = (event["id"], event["instance"])
                (owners.add if kind == "assigned" else owners.remove)(key, parts)

        command = self.java.consume(self.bootstrap, self.topic, self.group, instances=n,
                                    together=True, listener=listener,
                                    config={"auto.offset.reset": "earliest"})
        self._commands[command.id] = command
        if not subscribing.wait(timeout_s):
            raise TimeoutError(f"{n} Java consumers not built in {timeout_s:.0f} s\n"
                               f"{self.java.stderr_tail()}")
        return [(command.id, i) for i in range(n)], at[0]

    def leave(self, command_id: str) -> None:
        command = self._commands.pop(command_id)
        threading.Thread(target=command.stop, args=(120,), daemon=True).start()

    def close(self) -> None:
        for command in self._commands.values():
            with contextlib.suppress(Exception):
                command.stop(180)
        self._commands.clear()


# ------------------------------------------------------------------------------ scenarios


@dataclass
class Run:
    """What a scenario needs besides the system: the options, the Java driver, fresh names."""

    args: argparse.Namespace
    java: object | None
    topics: dict[tuple[str, int], str] = field(default_factory=dict)
    share_topics: set[tuple[str, str]] = field(default_factory=set)

    def group(self, what: str) -> str:
        return f"{what}-{time.time_ns()}"

    def topic(self, system: System, partitions: int) -> str:
        """A topic of ``partitions`` partitions on ``system`` (made once, before any clock)."""
        key = (system.name, partitions)
        if key not in self.topics:
            name = f"groups-{partitions}"
            system.create_topic(name, partitions)
            self.topics[key] = name
        return self.topics[key]


def stable_time(system: System, client: str, size: int, run: Run) -> float:
    """Seconds for ``size`` consumers on a topic of ``size`` partitions to a stable group."""
    topic, group = run.topic(system, size), run.group(f"stable-{client}-{size}")
    owners = Owners(size)
    timeout = run.args.timeout
    if client == "librdkafka" and size > HOST_CONSUMERS:
        hosts = RdkafkaHosts(system.bootstrap, topic, group, owners, size, timeout)
        owners.expect(set(hosts.keys))
        try:
            t0 = hosts.start()
            done = owners.wait(timeout)
        finally:
            hosts.close()
    elif client == "librdkafka":
        members = RdkafkaGroup(system.bootstrap, topic, group, owners)
        keys = members.build(size)
        owners.expect(set(keys))
        try:
            t0 = members.start(keys)
            done = owners.wait(timeout)
        finally:
            members.close()
    else:
        members = JavaGroup(run.java, system.bootstrap, topic, group, owners)
        try:
            keys, t0 = members.start(size, timeout)
            owners.expect(set(keys))
            done = owners.wait(timeout)
        finally:
            members.close()
    return done - t0 if done is not None else float("nan")


def leave_join_times(system: System, client: str, size: int, run: Run
                     ) -> tuple[float, float]:
    """Median seconds to a stable group again after one of ``size`` members leaves, and after
    one joins (``--rounds`` of each, alternately, in one group)."""
    topic, group = run.topic(system, size), run.group(f"churn-{client}-{size}")
    owners = Owners(size)
    timeout = run.args.timeout
    leaves: list[float] = []
    joins: list[float] = []
    if client == "librdkafka":
        rd = RdkafkaGroup(system.bootstrap, topic, group, owners)
        live = rd.build(size)
        owners.expect(set(live))
        try:
            rd.start(live)
            if owners.wait(timeout) is None:
                raise RuntimeError(f"{system.name}: {size} librdkafka consumers never stable")
            for _ in range(run.args.rounds):
                leaver = live.pop(0)
                joiner = rd.build(1)
                t0 = time.perf_counter()
                owners.expect(set(live))
                rd.leave(leaver)
                done = owners.wait(timeout)
                leaves.append(done - t0 if done is not None else float("nan"))
                live += joiner
                owners.expect(set(live))
                t0 = rd.start(joiner)
                done = owners.wait(timeout)
                joins.append(done - t0 if done is not None else float("nan"))
        finally:
            rd.close()
    else:
        jg = JavaGroup(run.java, system.bootstrap, topic, group, owners)
        try:
            stayers, _ = jg.start(size - 1, timeout)
            batches = [jg.start(1, timeout)[0]]
            owners.expect(set(stayers) | set(batches[0]))
            if owners.wait(timeout) is None:
                raise RuntimeError(f"{system.name}: {size} Java consumers never stable")
            for _ in range(run.args.rounds):
                leaver = batches.pop(0)
                t0 = time.perf_counter()
                owners.expect(set(stayers))
                jg.leave(leaver[0][0])
                done = owners.wait(timeout)
                leaves.append(done - t0 if done is not None else float("nan"))
                joiner, t0 = jg.start(1, timeout)
                owners.expect(set(stayers) | set(joiner))
                batches.append(joiner)
                done = owners.wait(timeout)
                joins.append(done - t0 if done is not None else float("nan"))
        finally:
            jg.close()
    return statistics.median(leaves), statistics.median(joins)


def share_rate(system: System, client: str, run: Run, records: int) -> float:
    """Records acknowledged per second by ``--share-consumers`` share consumers: from the first
    delivery to the ``records``-th distinct record confirmed."""
    args = run.args
    topic = f"share-{client}-{records}"
    # A topic per client, its records (on a system that stores them) produced once, before
    # the clock: as many again as the consumers need, so that no end of log slows the last.
    if (system.name, topic) not in run.share_topics:
        system.create_topic(topic, SHARE_PARTITIONS)
        system.fill_share_topic(topic, SHARE_PARTITIONS, 2 * records)
        run.share_topics.add((system.name, topic))
    group = run.group(f"share-{client}")
    set_share_earliest(system.share_bootstrap, group)
    timeout = args.timeout
    if client == "librdkafka":
        consumers = RdkafkaShareConsumers(system.share_bootstrap, group, topic,
                                          args.share_consumers, extra=QUIET)
        consumers.start()
        try:
            if not consumers.wait_for(lambda log: len(log.acknowledged()) >= records, timeout):
                return float("nan")
        finally:
            consumers.close()
        log = consumers.log
        with log.lock:
            first = min(t for t, *_ in log.deliveries)
            confirmed: dict[tuple[int, int], float] = {}
            for t, _, p, o in log.confirmed:
                confirmed.setdefault((p, o), t)
        done = sorted(confirmed.values())[records - 1]
        return records / (done - first)
    acked: set[tuple[str, int]] = set()
    times: dict[str, float] = {}
    reached = threading.Event()
    lock = threading.Lock()

    def listener(event: dict) -> None:
        now = time.perf_counter()
        if event["event"] == "records":
            times.setdefault("first", now)
        elif event["event"] == "acknowledged" and event.get("error") is None:
            with lock:
                acked.update((event["partition"], o) for o in event["offsets"])
                if len(acked) >= records and "done" not in times:
                    times["done"] = now
                    reached.set()

    command = run.java.share(system.share_bootstrap, topic, group,
                             instances=args.share_consumers, listener=listener)
    try:
        if not reached.wait(timeout):
            return float("nan")
    finally:
        command.stop(120)
    return records / (times["done"] - times["first"])


def warm_up(system: System, run: Run) -> None:
    """Each client's first group and first share group on ``system``, untimed: Kafka makes
    ``__consumer_offsets`` and ``__share_group_state`` on first use (a first group waited
    15 s for it), and a JVM's first consumers run its interpreter."""
    for client in run.args.clients:
        if {"stable", "churn"} & set(run.args.scenarios) \
                and math.isnan(stable_time(system, client, 2, run)):
            print(f"  {system.name} {client}: warm-up group never stable", flush=True)
        if math.isnan(share_rate(system, client, run, 200)):
            print(f"  {system.name} {client}: warm-up share group got no records", flush=True)


# ------------------------------------------------------------------------------ the run


SCENARIOS = ("stable", "churn", "share")


def scenarios(args: argparse.Namespace) -> list[tuple[str, str, Callable]]:
    """(figure, client, measure(system, run) -> {figure: value}) in the order they run."""
    out = []
    for client in args.clients:
        for size in args.sizes if "stable" in args.scenarios else ():
            out.append((f"s to stable, {size:,} consumers", client,
                        lambda s, r, c=client, n=size: {
                            f"s to stable, {n:,} consumers": stable_time(s, c, n, r)}))
        if "churn" in args.scenarios:
            out.append((f"s to stable after a leave ({args.churn_size})", client,
                        lambda s, r, c=client: dict(zip(
                            (f"s to stable after a leave ({args.churn_size})",
                             f"s to stable after a join ({args.churn_size})"),
                            leave_join_times(s, c, args.churn_size, r), strict=True))))
        if "share" in args.scenarios:
            out.append(("share acks/s", client,
                        lambda s, r, c=client: {
                            "share acks/s": share_rate(s, c, r, args.share_records)}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 consumers, small share run")
    ap.add_argument("--sizes", help="group sizes to time (default 10,100,1000; quick: 10)")
    ap.add_argument("--clients", default="librdkafka,java")
    ap.add_argument("--systems", default="cohort,kafka")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="which scenarios to run: stable, churn (leave / join), share")
    ap.add_argument("--heartbeat-ms", type=int, default=500,
                    help="the KIP-848 heartbeat interval, the same on every system")
    ap.add_argument("--kafka-intervals", action="store_true",
                    help="Cohort without its 50 ms interval for a member with a step waiting")
    ap.add_argument("--churn-size", type=int, help="members of leave / join (100; quick: 10)")
    ap.add_argument("--rounds", type=int, help="leave / join rounds (3; quick: 2)")
    ap.add_argument("--share-consumers", type=int, default=3)
    ap.add_argument("--share-records", type=int, help="(20,000; quick: 3,000)")
    ap.add_argument("--share-rate", type=float, default=50_000.0,
                    help="Cohort's share stream: records per second per partition")
    ap.add_argument("--coordinator-partitions", type=int, default=4)
    ap.add_argument("--timeout", type=float, help="seconds a scenario may take (300; quick: 120)")
    args = ap.parse_args()
    # --quick changes the defaults only: an option given says what it says.
    defaults = ({"sizes": "10", "churn_size": 10, "rounds": 2, "share_records": 3_000,
                 "timeout": 120.0} if args.quick else
                {"sizes": "10,100,1000", "churn_size": 100, "rounds": 3, "share_records": 20_000,
                 "timeout": 300.0})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.sizes = [int(s) for s in str(args.sizes).split(",")]
    args.clients = args.clients.split(",")
    args.scenarios = args.scenarios.split(",")
    if set(args.scenarios) - set(SCENARIOS):
        ap.error(f"unknown scenarios {sorted(set(args.scenarios) - set(SCENARIOS))}; "
                 f"known: {list(SCENARIOS)}")
    wanted = args.systems.split(",")
    unknown = set(wanted) - set(STARTERS)
    if unknown:
        ap.error(f"unknown systems {sorted(unknown)}; known: {sorted(STARTERS)}")
    print(f"sizes {args.sizes}, clients {args.clients}, systems {wanted}; KIP-848 heartbeat "
          f"interval {args.heartbeat_ms} ms on every system (Cohort's for a member with a step "
          f"waiting: {args.heartbeat_ms if args.kafka_intervals else min(args.heartbeat_ms, 50)}"
          f" ms); leave/join in a group of {args.churn_size}, {args.rounds} rounds; "
          f"{args.share_consumers} share consumers x {args.share_records:,} records on "
          f"{SHARE_PARTITIONS} partitions; load average {os.getloadavg()[0]:.1f}", flush=True)
    print("share: Kafka's records are produced before the clock, Cohort's "
          "synthetic stream holds them already: the comparison is the share-fetch and "
          "acknowledgement path", flush=True)
    gc.collect()
    gc.freeze()
    results: dict[str, dict[str, float]] = {name: {} for name in wanted}
    with contextlib.ExitStack() as stack:
        systems = [stack.enter_context(STARTERS[name](args)) for name in wanted]
        java = None
        if "java" in args.clients:
            from actors.tools.java_clients import JavaClients

            java = stack.enter_context(JavaClients(jvm_options=JAVA_CLIENT_JVM_OPTIONS))
        run = Run(args, java)
        for system in systems:
            warm_up(system, run)
        for k, (figure, client, measure) in enumerate(scenarios(args)):
            order = systems if k % 2 == 0 else systems[::-1]
            for system in order:
                try:
                    got = measure(system, run)
                except Exception as e:  # a system that fails a scenario: nan, and why
                    print(f"  {system.name} {client}: {figure}: failed: {e!r}"[:600], flush=True)
                    got = {figure: float("nan")}
                for f, v in got.items():
                    results[system.name][f"{f} [{client}]"] = v
                    print(f"  {system.name} {client}: {f}: {v:,.3f}", flush=True)
    report(results)
    return 0


def report(results: dict[str, dict[str, float]]) -> None:
    names = list(results)
    figures = list(dict.fromkeys(f for r in results.values() for f in r))
    peers = [p for p in ("kafka",) if p in results]
    ratios = [f"cohort/{p}" for p in peers] if "cohort" in results else []
    print("\n| figure | " + " | ".join(names + ratios) + " | goal |")
    print("|---" * (len(names) + len(ratios) + 2) + "|")
    for f in figures:
        row = [f"{results[n].get(f, float('nan')):,.3f}" if f.startswith("s ")
               else f"{results[n].get(f, float('nan')):,.0f}" for n in names]
        for p in peers if ratios else []:
            theirs = results[p].get(f, float("nan"))
            row.append(f"{results['cohort'].get(f, float('nan')) / theirs:.2f}x"
                       if not math.isnan(theirs) and theirs else "—")
        print(f"| {f} | " + " | ".join(row) + f" | {goal(f, results)} |")
    print(f"load average {os.getloadavg()[0]:.1f}")


def goal(figure: str, results: dict[str, dict[str, float]]) -> str:
    """Issue 29's goal for ``figure`` against Kafka, met or not ('' where it sets none)."""
    if "cohort" not in results or "kafka" not in results:
        return ""
    ours, theirs = results["cohort"].get(figure), results["kafka"].get(figure)
    if ours is None or theirs is None:
        return ""
    if math.isnan(ours) or math.isnan(theirs):
        return "no figure to judge (a system never got there)"
    if figure.startswith("s to stable, 1,000 consumers"):
        return f"<= Kafka's time: {'met' if ours <= theirs else 'NOT met'}"
    if figure.startswith("share acks/s"):
        return f">= 1.0x Kafka: {'met' if ours >= theirs else 'NOT met'}"
    return ""


if __name__ == "__main__":
    sys.exit(main())
