"""Exporting a live Cohort to Spark through ray.data and RayDP, and to Parquet.

Two consumer groups run in the session's cluster; what Spark sees must be what
ConsumerGroupDescribe says, group by group and member by member. Other tests' groups may share
the cluster, so every check filters on this module's groups.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from actors.tools.export import PARTITION_COLUMN, export_parquet, export_schema, export_via_actor
from actors.tools.state_tables import TABLES
from protocol import messages as m
from protocol.errors import Errors

pytestmark = [pytest.mark.ray, pytest.mark.spark]

GROUPS = {"spark-g1": (3, ["spark-a"]), "spark-g2": (2, ["spark-a", "spark-b"])}
TOPICS = {"spark-a": 6, "spark-b": 3}
END_OFFSET = 100  # every partition's (pretend) log end offset, for the lag query


@pytest.fixture(scope="module")
def groups(cluster):
    """The two groups, stable; returns their descriptions as exported (none changed during
    the export: they are described again afterwards and must be equal)."""
    for topic, n in TOPICS.items():
        cluster.create_topic(topic, n)
    # The export is compared with describes taken before and after it: the groups must not
    # churn meanwhile, even when starting Spark starves the consumer actors of CPU for a few
    # seconds, so their sessions are longer than the suite's 4 s.
    for g in GROUPS:
        cluster.set_group_config(g, consumer_session_timeout_ms=30_000)
    # No synthetic stream: the offsets are the ones this module commits, known in advance.
    hosts = [cluster.spawn_consumers(g, n, topics=topics, stream=False)
             for g, (n, topics) in GROUPS.items()]
    described = {g: cluster.wait_stable(g, members=n) for g, (n, _) in GROUPS.items()}
    yield described
    import ray

    ray.get([h.stop.remote(leave=True) for h in hosts])


@pytest.fixture(scope="module")
def committed(cluster, groups) -> dict[tuple[str, str, int], int]:
    """Commit offsets for spark-g1's partitions, if the coordinator takes offset commits yet.

    Returns {(group, topic, partition): offset} of the commits it accepted (maybe none).
    """
    accepted = {}
    g = groups["spark-g1"]
    for member in g.members:
        for tp in member.assignment.topic_partitions:
            req = m.OffsetCommitRequest(
                group_id="spark-g1", generation_id_or_member_epoch=member.member_epoch,
                member_id=member.member_id,
                topics=[m.OffsetCommitRequestTopic(tp.topic_name, [
                    m.OffsetCommitRequestPartition(p, 10 * p + 1) for p in tp.partitions
                ])],
            )
            resp = cluster.call(req)
            if resp.error_code != Errors.NONE:
                continue
            for topic in resp.topics:
                for part in topic.partitions:
                    if part.error_code == Errors.NONE:
                        accepted[("spark-g1", topic.name, part.partition_index)] = (
                            10 * part.partition_index + 1
                        )
    return accepted


@pytest.fixture(scope="module")
def frames(cluster, spark, groups, committed):
    dfs = cluster.export(spark)
    for g, before in groups.items():
        assert cluster.describe(g) == before, f"{g} changed during the export"
    return dfs


def collect(df, group_id: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.filter(df.group_id == group_id).collect()]


def by_member(rows: list[dict]) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {}
    for r in rows:
        out.setdefault(r["member_id"], {}).setdefault(r["topic_id"], []).append(r["partition"])
    return {mid: {t: sorted(ps) for t, ps in sorted(a.items())} for mid, a in out.items()}


def described(parts: list[m.DescribedTopicPartitions]) -> dict[str, list[int]]:
    return {tp.topic_id: sorted(tp.partitions) for tp in parts if tp.partitions}


# ---------------------------------------------------------------------- tests


def test_every_frame_has_its_tables_columns(frames):
    assert tuple(frames) == TABLES
    for name, df in frames.items():
        assert df.columns == export_schema(name).names


def test_frames_match_describe_for_every_group(cluster, frames, groups):
    for g, d in groups.items():
        [row] = collect(frames["groups"], g)
        assert row == {
            "group_id": g, "group_type": "consumer", "protocol_type": "consumer",
            "state": d.group_state, "group_epoch": d.group_epoch,
            "assignment_epoch": d.assignment_epoch, "assignor": d.assignor_name,
            "member_count": len(d.members), PARTITION_COLUMN: cluster.partition_for(g),
        }
        members = {r["member_id"]: r for r in collect(frames["members"], g)}
        assert sorted(members) == [dm.member_id for dm in d.members]
        current = by_member(
            [r for r in collect(frames["current_assignment"], g) if not r["pending_revocation"]]
        )
        target = by_member(collect(frames["target_assignment"], g))
        for dm in d.members:
            mem = members[dm.member_id]
            assert (mem["member_epoch"], mem["state"], mem["protocol"]) == (
                dm.member_epoch, dm.member_state, "consumer"
            )
            assert mem["subscribed_topics"] == dm.subscribed_topic_names
            assert current.get(dm.member_id, {}) == described(dm.assignment.topic_partitions)
            assert target.get(dm.member_id, {}) == described(
                dm.target_assignment.topic_partitions
            )


def test_spark_sql_counts_owned_partitions_and_lag_per_group(frames, groups, committed, spark):
    for name, df in frames.items():
        df.createOrReplaceTempView(name)
    got = {
        r["group_id"]: (r["members"], r["owned"], r["lag"])
        for r in spark.sql(f"""
            SELECT c.group_id,
                   COUNT(DISTINCT c.member_id) AS members,
                   COUNT(*) AS owned,
                   SUM({END_OFFSET} - COALESCE(o.committed_offset, 0)) AS lag
            FROM current_assignment c
            LEFT JOIN offsets o
              ON o.group_id = c.group_id AND o.topic = c.topic_name
             AND o.partition = c.partition
            WHERE NOT c.pending_revocation AND c.group_id IN ('spark-g1', 'spark-g2')
            GROUP BY c.group_id
        """).collect()
    }
    expected = {}
    for g, d in groups.items():
        owned = [(tp.topic_name, p) for dm in d.members
                 for tp in dm.assignment.topic_partitions for p in tp.partitions]
        lag = sum(END_OFFSET - committed.get((g, t, p), 0) for t, p in owned)
        expected[g] = (len(d.members), sum(TOPICS[t] for t in GROUPS[g][1]), lag)
        assert len(owned) == expected[g][1]
    assert got == expected


def test_committed_offsets_are_exported_when_the_coordinator_takes_them(frames, committed):
    rows = collect(frames["offsets"], "spark-g1")
    assert {(r["group_id"], r["topic"], r["partition"]): r["committed_offset"]
            for r in rows} == committed


def read_parquet_tables(root) -> dict:
    return {name: pq.read_table(root / name) for name in TABLES}


def test_export_parquet_writes_every_table_readable_by_pyarrow(cluster, groups, tmp_path):
    counts = export_parquet(cluster.partitions(), tmp_path)
    tables = read_parquet_tables(tmp_path)
    for name, table in tables.items():
        assert table.schema.names == export_schema(name).names
        assert table.num_rows == counts[name]
    members = [r for r in tables["members"].to_pylist() if r["group_id"] in GROUPS]
    assert sorted(r["member_id"] for r in members) == sorted(
        dm.member_id for d in groups.values() for dm in d.members
    )
    # A second export replaces the first rather than adding to it. (Only this test's groups
    # are compared: the session's other groups may gain or lose members between the two.)
    again = export_parquet(cluster.partitions(), tmp_path)
    rows = read_parquet_tables(tmp_path)["members"]
    assert rows.num_rows == again["members"]
    assert sorted(r["member_id"] for r in rows.to_pylist() if r["group_id"] in GROUPS) == sorted(
        r["member_id"] for r in members)


def test_export_parquet_through_spark_writes_the_same_rows(cluster, spark, groups, tmp_path):
    counts = export_parquet(cluster.partitions(), tmp_path, spark)
    tables = read_parquet_tables(tmp_path)
    assert {name: t.num_rows for name, t in tables.items()} == counts
    assignment = [r for r in tables["current_assignment"].to_pylist() if r["group_id"] in GROUPS]
    assert len(assignment) == sum(TOPICS[t] for _, topics in GROUPS.values() for t in topics)


def test_an_actor_exports_for_clients_that_cannot_host_spark(cluster, groups, tmp_path):
    counts = export_via_actor(cluster.num_partitions, str(tmp_path))
    groups_table = pq.read_table(tmp_path / "groups")
    assert groups_table.num_rows == counts["groups"]
    assert set(GROUPS) <= set(groups_table.column("group_id").to_pylist())
