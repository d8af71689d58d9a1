"""A partition's metrics, fed by a real shard's census and epoch bumps, recorded by stand-ins for
Ray's metric classes (what a Prometheus scrape would read, without Ray's metrics agent).

Which groups are counted is the group-type table's to say: every row's groups appear in
``group_count`` under its own ``protocol`` tag (share groups were left out when the tags were
listed by hand), and a row's own state gauge and rebalance metric are published for it.
"""

from __future__ import annotations

import pytest

from actors.runtime import metrics as partition_metrics
from actors.runtime.metrics import PREFIX, PartitionMetrics
from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.group_types import GROUP_TYPES
from protocol.metadata import ConnectorMetadata, MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

IMAGE = MetadataImage([TopicMetadata("foo-id", "foo", 2)], [ConnectorMetadata("workers", "s", 1)])


class Recorded:
    """A stand-in for ``ray.util.metrics.Gauge`` / ``Counter``: the last value per tag set."""

    by_name: dict[str, Recorded] = {}

    def __init__(self, name: str, description: str = "", tag_keys: tuple = ()) -> None:
        self.name, self.values = name, {}
        Recorded.by_name[name] = self

    def set(self, value: float, tags: dict) -> None:
        self.values[tuple(sorted(tags.items()))] = value

    def inc(self, value: float, tags: dict) -> None:
        key = tuple(sorted(tags.items()))
        self.values[key] = self.values.get(key, 0.0) + value

    def value(self, **tags: str) -> float:
        return self.values[tuple(sorted({"partition": "0", **tags}.items()))]


@pytest.fixture
def recorded(monkeypatch) -> dict[str, Recorded]:
    Recorded.by_name = {}
    monkeypatch.setattr(partition_metrics.metrics, "Gauge", Recorded)
    monkeypatch.setattr(partition_metrics.metrics, "Counter", Recorded)
    return Recorded.by_name


def one_group_of_each_type() -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(CoordinatorConfig(), IMAGE)
    shard.handle(m.ConsumerGroupHeartbeatRequest(
        group_id="consumers", member_id="c1", member_epoch=0, rebalance_timeout_ms=60_000,
        subscribed_topic_names=["foo"], topic_partitions=[]))
    shard.handle(m.ConnectGroupHeartbeatRequest(group_id="workers", member_id="w1",
                                                member_epoch=0, rebalance_timeout_ms=60_000))
    shard.handle(m.JoinGroupRequest(
        group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        member_id="", protocol_type="consumer",
        protocols=[m.JoinGroupRequestProtocol("range", b"")]))
    for member in ("s1", "s2"):
        shard.handle(m.ShareGroupHeartbeatRequest("shares", member, 0,
                                                  subscribed_topic_names=["foo"]))
    return shard


def test_share_groups_appear_in_the_group_count_gauge(recorded):
    shard = one_group_of_each_type()
    PartitionMetrics(0).groups(*shard.census())
    gauge = recorded[PREFIX + "group_count"]
    assert gauge.value(protocol="share") == 1.0
    assert {p: gauge.value(protocol=p) for p in ("consumer", "generic", "connect", "share")} \
        == {"consumer": 1.0, "generic": 1.0, "connect": 1.0, "share": 1.0}


def test_every_row_is_counted_under_its_label_zeros_too(recorded):
    PartitionMetrics(0).groups(*GroupCoordinatorShard().census())
    gauge = recorded[PREFIX + "group_count"]
    assert {tags: v for tags, v in gauge.values.items()} == {
        (("partition", "0"), ("protocol", row.metrics_label)): 0.0 for row in GROUP_TYPES
    }


def test_a_rows_state_gauge_counts_its_groups_by_state(recorded):
    shard = one_group_of_each_type()
    PartitionMetrics(0).groups(*shard.census())
    states = recorded[PREFIX + "consumer_group_count"]
    consumer = shard.groups["consumers"]
    assert states.value(state=consumer.state) == 1.0
    assert sum(states.values.values()) == 1.0  # the other types are not consumer groups


def test_each_epoch_bump_of_a_row_with_a_rebalance_metric_is_counted(recorded):
    shard = GroupCoordinatorShard(CoordinatorConfig(), IMAGE)
    records = []
    for member in ("c1", "c2"):
        records += shard.handle(m.ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=0, rebalance_timeout_ms=60_000,
            subscribed_topic_names=["foo"], topic_partitions=[])).records
    records += shard.handle(m.ShareGroupHeartbeatRequest(
        "shares", "s1", 0, subscribed_topic_names=["foo"])).records
    bumps = shard.epoch_bumps(records)
    assert bumps == {"consumer_group_rebalance": 2}  # share groups publish no rebalance metric
    PartitionMetrics(0).turn(0.001, 0, bumps)
    assert recorded[PREFIX + "consumer_group_rebalance_count"].value() == 2.0
    assert recorded[PREFIX + "consumer_group_rebalance_rate"].value() > 0
