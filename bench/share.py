"""Share groups with real clients: 3 confluent-kafka ShareConsumers on librdkafka's mock cluster
and on Cohort's gateway, side by side in one run.

The mock: the consumers join a 3-partition topic, then a producer writes ``--records`` records
(the mock's share-partitions start at the end, ``share.auto.offset.reset=latest``); the clock
runs from the first record produced to the last acknowledgement confirmed. Cohort: the same
consumers on the gateway, whose topics are synthetic streams growing at ``--rate`` records a
second per partition; the clock runs from the first delivery to the ``--records``-th distinct
record acknowledged (the stream is faster than the consumers, so they, not the stream, set the
pace). Optionally (``--kill``) the group's partition actor is killed midway on Cohort.

Prints records/s delivered and acknowledged, redeliveries, acknowledged records delivered
again (must be 0), and the Cohort / mock ratio.

    .venv/bin/python bench/share.py [--records 3000] [--rate 5000] [--kill]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# The repository first: bench/ holds a module named like the assignors package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer

from actors.tools.kafka_mock import MockCluster
from actors.tools.share_scenario import ShareConsumers, ShareLog

TOPIC, GROUP, PARTITIONS, CONSUMERS = "orders", "share-bench", 3, 3
JOIN_S, RUN_S = 5.0, 120.0


def _figures(name: str, log: ShareLog, started: float, records: int) -> dict:
    with log.lock:
        confirmed = sorted(t for t, *_ in log.confirmed)
        delivered = sorted(t for t, *_ in log.deliveries)
    done = confirmed[min(records, len(confirmed)) - 1] if confirmed else started
    seconds = max(done - started, 1e-9)
    acked = len(log.acknowledged())
    row = {"side": name, "seconds": seconds,
           "delivered_per_s": sum(1 for t in delivered if t <= done) / seconds,
           "acked_per_s": min(acked, records) / seconds, "acked": acked,
           "redeliveries": log.redeliveries(), "acked_then_redelivered":
           len(log.redelivered_after_ack()), "errors": len(log.errors)}
    print(f"{name:>7}: {row['seconds']:.2f} s, {row['delivered_per_s']:,.0f} records/s "
          f"delivered, {row['acked_per_s']:,.0f} acknowledged/s ({acked} acknowledged), "
          f"{row['redeliveries']} redeliveries, {row['acked_then_redelivered']} acknowledged "
          f"then delivered again, {row['errors']} client errors")
    return row


def run_mock(records: int) -> dict:
    mock = MockCluster(1)
    mock.create_topic(TOPIC, PARTITIONS)
    consumers = ShareConsumers(mock.bootstrap, GROUP, TOPIC, CONSUMERS).start()
    time.sleep(JOIN_S)  # the mock offers no view of its share group: give it time to assign
    producer = Producer({"bootstrap.servers": mock.bootstrap, "linger.ms": 5})
    started = time.monotonic()
    for i in range(records):
        producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
    producer.flush(30)
    consumers.wait_for(lambda log: len(log.acknowledged()) >= records, RUN_S)
    consumers.close()
    return _figures("mock", consumers.log, started, records)


def run_cohort(records: int, rate: float, kill: bool) -> dict:
    import ray

    from actors.cluster import Cluster
    from protocol.config import CoordinatorConfig

    # A Ray of its own (address="local"): never join a cluster someone else started.
    ray.init(address="local", namespace="cohort", include_dashboard=False, log_to_driver=False)
    config = CoordinatorConfig(group_share_heartbeat_interval_ms=500,
                               group_share_min_heartbeat_interval_ms=100,
                               group_share_session_timeout_ms=10_000,
                               group_share_min_session_timeout_ms=1_000)
    cluster = Cluster.start(num_partitions=2, storage_path=tempfile.mkdtemp(prefix="bench-"),
                            config=config)
    try:
        cluster.create_topic(TOPIC, PARTITIONS)
        bootstrap = cluster.start_gateway(port=0, records_per_s=rate, batch_interval_ms=50)
        consumers = ShareConsumers(bootstrap, GROUP, TOPIC, CONSUMERS).start()
        consumers.wait_for(lambda log: bool(log.deliveries), RUN_S)
        started = time.monotonic()
        if kill:
            consumers.wait_for(lambda log: len(log.acknowledged()) >= records // 2, RUN_S)
            cluster.kill_partition(cluster.partition_for(GROUP))
        consumers.wait_for(lambda log: len(log.acknowledged()) >= records, RUN_S)
        consumers.close()
        return _figures("cohort", consumers.log, started, records)
    finally:
        cluster.shutdown()
        ray.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=50_000.0,
                    help="Cohort's stream: records per second per partition")
    ap.add_argument("--kill", action="store_true",
                    help="kill the group's partition actor midway (Cohort)")
    args = ap.parse_args()
    mock = run_mock(args.records)
    cohort = run_cohort(args.records, args.rate, args.kill)
    acked = cohort["acked_per_s"] / max(mock["acked_per_s"], 1e-9)
    delivered = cohort["delivered_per_s"] / max(mock["delivered_per_s"], 1e-9)
    print(f"cohort / mock: {acked:.2f}x acknowledged records/s, {delivered:.2f}x delivered "
          "records/s")
    return 1 if mock["acked_then_redelivered"] or cohort["acked_then_redelivered"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
