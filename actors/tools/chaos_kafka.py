"""``cohort chaos --kafka-clients N``: real Kafka consumers in the chaos run.

The chaos run (``actors.tools.chaos``) drives groups of Ray consumers while it kills partition
and consumer actors, then checks the invariants on every consumer's timeline. This adds N
confluent-kafka consumers (``group.protocol=consumer``, through the gateway) to its groups,
spread round-robin, each a ``KafkaConsumerActor`` that appends its rebalance callbacks'
timeline (assigned / revoked / lost with the member epoch the gateway last sent it,
processed ranges of the synthetic stream, committed offsets) to a file as the Ray consumers
do. To the run they are consumers like any other: they share groups with Ray consumers, may
be killed (and replaced), and the same checks (invariants 1, 2, 3 and 5) read their
timelines. Kept apart from ``chaos`` on purpose: a subclass that hooks the first time a group
gets a consumer, so the two modules change independently.
"""

from __future__ import annotations

from pathlib import Path

from actors.cluster import Cluster
from actors.tools.chaos import ChaosReport, ChaosRun, _Consumer


class KafkaChaosRun(ChaosRun):
    def __init__(self, cluster: Cluster, workdir: Path, groups: int, consumers: int,
                 partitions: int, seed: int, progress: bool, kafka_clients: int,
                 **options) -> None:
        super().__init__(cluster, workdir, groups, consumers, partitions, seed, progress,
                         **options)
        self.kafka_clients = kafka_clients
        self._bootstrap: str | None = None
        self.started_gateway = False  # stop only a gateway this run started
        self._seeded: set[str] = set()

    def _spawn(self, group: str) -> None:
        super()._spawn(group)
        if group not in self._seeded:  # the group's topic exists now: add its real clients
            self._seeded.add(group)
            mine = [i for i in range(self.kafka_clients)
                    if self.groups[i % len(self.groups)] == group]
            for i in mine:
                self._spawn_kafka(group, i)

    def _spawn_kafka(self, group: str, i: int) -> None:
        from actors.clients.kafka_consumer import KafkaConsumerActor
        from actors.runtime.controller import NAMESPACE

        if self._bootstrap is None:
            from actors.gateway.launch import running_gateway

            self.started_gateway = running_gateway() is None
            self._bootstrap = self.cluster.start_gateway(port=0)
        path = self.workdir / f"kafka-{i}.jsonl"
        handle = KafkaConsumerActor.options(namespace=NAMESPACE).remote(
            self._bootstrap, group, [self.topics[group]], timeline_path=str(path))
        self.consumers.append(_Consumer(handle, group, False, path))


def run_chaos(cluster: Cluster, seconds: float | None, workdir: str | Path, groups: int = 3,
              consumers: int = 3, partitions: int = 6, seed: int = 0, progress: bool = True,
              kafka_clients: int = 0, steps: int | None = None, **options) -> ChaosReport:
    """``chaos.run_chaos`` with ``kafka_clients`` real consumers added to its groups;
    ``options`` are ``ChaosRun``'s (``classic_groups``, ``pause_s``, ``connect_groups``,
    ``classic_connect_groups``)."""
    run = KafkaChaosRun(cluster, Path(workdir), groups, consumers, partitions, seed, progress,
                        kafka_clients, **options)
    try:
        return run.run(seconds, steps)
    finally:
        if run.started_gateway:
            cluster.stop_gateway()
