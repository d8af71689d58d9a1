"""The coordinator's metrics, with the names seed 000 lists for Kafka's group coordinator.

Kafka publishes them as ``kafka.server:type=group-coordinator-metrics,name=<name>``;
Prometheus (where ``ray.util.metrics`` sends them, through Ray's metrics agent, which needs
``ray[default]``) does not allow dashes, so ``name=group-count`` becomes
``group_coordinator_group_count`` and Ray prefixes ``ray_``. Every series carries the
``partition`` tag so one Grafana query can sum or split across the actors.

The rate metrics (rebalance rate, idle ratio) are computed here over a sliding window as
Kafka's sensors do, so a reader needs no PromQL to see them; the counters are there too.

Which groups are counted is the group-type table's to say: ``group_count`` has one
``protocol`` tag per row (its ``metrics_label``: seed 000's ``consumer`` | ``generic``, then
``connect``, ``share``), and a row that names a state gauge or a rebalance metric
(``consumer_group_count``, ``consumer_group_rebalance_count`` / ``_rate``) gets it; this module
names no group type.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from ray.util import metrics

from protocol.group_types import GROUP_TYPES

PREFIX = "group_coordinator_"
# Kafka's sensors use 30 s samples; one window is enough to read a rate off a gauge.
RATE_WINDOW_S = 30.0
# Bound on remembered rebalance timestamps (TigerStyle: every history has a limit).
RATE_HISTORY_MAX = 100_000

PARTITION_STATES = ("loading", "active", "recovering", "fenced", "failed")
# The per-turn gauges (queue size, rebalance rate, idle ratio) are set at most this often, with
# the busy time and epoch bumps of every turn since summed: a Ray metric's update costs ~5 µs
# and there are three, ~15 µs of every turn between its append and its replies; Prometheus
# reads them every few seconds. An idle partition still turns every second or so.
TURN_EVERY_S = 0.05
# The group counts, a census of the shard, at most this often.
GROUPS_EVERY_S = 1.0


class PartitionMetrics:
    """The metrics of one ``OffsetsPartition``; cheap to update every mailbox turn."""

    def __init__(self, partition: int) -> None:
        self.tags = {"partition": str(partition)}
        keys = ("partition",)
        self.group_count = metrics.Gauge(
            PREFIX + "group_count", "groups by rebalance protocol", tag_keys=(*keys, "protocol")
        )
        self.partition_count = metrics.Gauge(
            PREFIX + "partition_count", "__consumer_offsets partitions by state",
            tag_keys=(*keys, "state"),
        )
        self.event_queue_size = metrics.Gauge(
            PREFIX + "event_queue_size", "events waiting in the partition's mailbox", tag_keys=keys
        )
        # A row's state gauge: (the gauge, the states it publishes).
        self.state_gauges = {
            row.state_gauge: (
                metrics.Gauge(PREFIX + row.state_gauge, f"{row.name} groups by state",
                              tag_keys=(*keys, "state")),
                row.states,
            )
            for row in GROUP_TYPES
            if row.state_gauge is not None
        }
        self.rebalances = {
            row.rebalance_metric: _Rebalances(row.rebalance_metric, row.name, keys)
            for row in GROUP_TYPES
            if row.rebalance_metric is not None
        }
        self.load_time_max = metrics.Gauge(
            PREFIX + "partition_load_time_max", "longest partition load, ms", tag_keys=keys
        )
        self.load_time_avg = metrics.Gauge(
            PREFIX + "partition_load_time_avg", "mean partition load, ms", tag_keys=keys
        )
        self.idle_ratio_min = metrics.Gauge(
            PREFIX + "thread_idle_ratio_min", "lowest idle ratio of a window", tag_keys=keys
        )
        self.idle_ratio_avg = metrics.Gauge(
            PREFIX + "thread_idle_ratio_avg", "mean idle ratio since start", tag_keys=keys
        )
        self._loads_ms: list[float] = []
        self._busy_s = 0.0
        self._window_busy_s = 0.0
        self._started = self._window_start = time.monotonic()
        self._idle_min = 1.0

    def set_state(self, state: str) -> None:
        for s in PARTITION_STATES:
            self.partition_count.set(1.0 if s == state else 0.0, {**self.tags, "state": s})

    def loaded(self, seconds: float) -> None:
        self._loads_ms.append(seconds * 1000)
        self.load_time_max.set(max(self._loads_ms), self.tags)
        self.load_time_avg.set(sum(self._loads_ms) / len(self._loads_ms), self.tags)

    def turn(self, busy_s: float, queue_size: int, rebalances: dict[str, int]) -> None:
        """After each mailbox turn: how long it worked, what waits, how many epochs moved (per
        rebalance metric: ``GroupCoordinatorShard.epoch_bumps``)."""
        now = time.monotonic()
        self._busy_s += busy_s
        self._window_busy_s += busy_s
        self.event_queue_size.set(float(queue_size), self.tags)
        for name, metric in self.rebalances.items():
            metric.turn(now, rebalances.get(name, 0), self.tags)
        elapsed = now - self._window_start
        if elapsed >= RATE_WINDOW_S:
            self._idle_min = min(self._idle_min, max(0.0, 1.0 - self._window_busy_s / elapsed))
            self._window_start, self._window_busy_s = now, 0.0
            self.idle_ratio_min.set(self._idle_min, self.tags)
        total = max(now - self._started, 1e-9)
        self.idle_ratio_avg.set(max(0.0, 1.0 - self._busy_s / total), self.tags)

    def groups(self, by_label: dict[str, int], by_state: dict[str, dict[str, int]]) -> None:
        """Groups per row's metrics label and, for each row's state gauge, its groups per state
        (``GroupCoordinatorShard.census``)."""
        for row in GROUP_TYPES:
            label = row.metrics_label
            self.group_count.set(float(by_label.get(label, 0)), {**self.tags, "protocol": label})
        for name, (gauge, states) in self.state_gauges.items():
            counts = by_state.get(name, {})
            for state in states:
                gauge.set(float(counts.get(state, 0)), {**self.tags, "state": state})


class _Rebalances:
    """One row's epoch bumps: a counter, and their rate over the last ``RATE_WINDOW_S``."""

    def __init__(self, name: str, group_type: str, keys: tuple[str, ...]) -> None:
        self.count = metrics.Counter(
            PREFIX + name + "_count", f"{group_type} group epoch bumps", tag_keys=keys
        )
        self.rate = metrics.Gauge(
            PREFIX + name + "_rate",
            f"{group_type} group epoch bumps per second over {RATE_WINDOW_S:.0f} s",
            tag_keys=keys,
        )
        self._at: collections.deque[float] = collections.deque(maxlen=RATE_HISTORY_MAX)

    def turn(self, now: float, bumps: int, tags: dict[str, str]) -> None:
        if bumps:
            self.count.inc(float(bumps), tags)
            self._at.extend([now] * min(bumps, RATE_HISTORY_MAX))
        while self._at and self._at[0] < now - RATE_WINDOW_S:
            self._at.popleft()
        self.rate.set(len(self._at) / RATE_WINDOW_S, tags)


class NoMetrics:
    """Metrics that go nowhere: for a partition's turn logic run outside Ray (tests)."""

    def set_state(self, state: str) -> None:
        pass

    def loaded(self, seconds: float) -> None:
        pass

    def turn(self, busy_s: float, queue_size: int, rebalances: dict[str, int]) -> None:
        pass

    def groups(self, by_label: dict[str, int], by_state: dict[str, dict[str, int]]) -> None:
        pass


class ThrottledMetrics:
    """A partition's metrics as its turns report them: every turn is counted, and the gauges
    are set at most every ``TURN_EVERY_S`` (``GROUPS_EVERY_S`` for the census), so nothing is
    lost and a gauge is at most that late."""

    def __init__(self, metrics: PartitionMetrics | NoMetrics) -> None:
        self.metrics = metrics
        self._turn_at = 0.0
        self._groups_at = 0.0
        self._busy_s = 0.0  # turns' work not yet reported
        self._bumps: dict[str, int] = {}  # epoch bumps not yet reported, per rebalance metric

    def set_state(self, state: str) -> None:
        self.metrics.set_state(state)

    def loaded(self, seconds: float) -> None:
        self.metrics.loaded(seconds)

    def turn(self, busy_s: float, queue_size: int, rebalances: dict[str, int],
             census: Callable[[], tuple[dict[str, int], dict[str, dict[str, int]]]]) -> None:
        self._busy_s += busy_s
        for name, bumps in rebalances.items():
            self._bumps[name] = self._bumps.get(name, 0) + bumps
        now = time.monotonic()
        if now - self._turn_at >= TURN_EVERY_S:
            self._turn_at = now
            self.metrics.turn(self._busy_s, queue_size, self._bumps)
            self._busy_s, self._bumps = 0.0, {}
        if now - self._groups_at >= GROUPS_EVERY_S:
            self._groups_at = now
            self.metrics.groups(*census())
