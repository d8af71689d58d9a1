"""``cohort topics``: Cohort's topics, as ``kafka-topics.sh`` lists, describes and changes them.

Cohort keeps topic *metadata* (ids, partition counts, racks) in its controller, because group
coordination needs it (subscriptions, assignments, epoch bumps when a topic grows); it keeps
no records and so no replicas. The command keeps Kafka's shape anyway: the same actions and
options, ``--topic`` as Kafka's include list (a regular expression matched against the whole
name, commas separating alternatives), the same printed lines and error texts, with the Kafka
error name at the end of a refusal. Where Kafka speaks of replicas, Cohort has none:
``ReplicationFactor: 0``, ``Leader: none``, and ``--replication-factor`` is checked as Kafka
checks it, then ignored (docs/decisions.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from actors.tools.admin import AdminError, Row
from protocol.errors import CoordinatorError, Errors

# Kafka's prefix for an exception a topic command ends on (TopicCommand.printException).
FAILED = "Error while executing topic command : "
MAX_REPLICATION_FACTOR = 32_767


def include_list(pattern: str | None) -> Callable[[str], bool]:
    """Kafka's ``IncludeList``: no pattern takes every topic; otherwise commas are
    alternatives and the whole name must match."""
    if pattern is None:
        return lambda _name: True
    try:
        regex = re.compile(pattern.strip().replace(",", "|"))
    except re.error as e:
        raise AdminError(f"{FAILED}Invalid topic pattern '{pattern}': {e}",
                         Errors.INVALID_REQUEST, prefix="") from None
    return lambda name: regex.fullmatch(name) is not None


def list_topics(cluster, pattern: str | None = None) -> list[str]:
    """The names of the topics matching ``pattern``, sorted, as ``--list`` prints them."""
    wanted = include_list(pattern)
    return sorted(t.name for t in cluster.topics() if wanted(t.name))


def _matching(cluster, pattern: str | None, if_exists: bool) -> list:
    """The topics ``--topic`` names; none is an error unless ``--if-exists`` (Kafka's
    ``ensureTopicExists``)."""
    wanted = include_list(pattern)
    found = sorted((t for t in cluster.topics() if wanted(t.name)), key=lambda t: t.name)
    if pattern and not found and not if_exists:
        raise AdminError(f"Topic '{pattern}' does not exist as expected",
                         Errors.UNKNOWN_TOPIC_OR_PARTITION)
    return found


def describe_topics(cluster, pattern: str | None = None, if_exists: bool = False) -> list[Row]:
    """One row per topic: its id, partition count and the racks of each partition."""
    return [
        {
            "topic": t.name,
            "topic_id": t.topic_id,
            "partitions": t.num_partitions,
            "replication_factor": 0,
            "racks": None if t.partition_racks is None
            else [sorted(r) for r in t.partition_racks],
        }
        for t in _matching(cluster, pattern, if_exists)
    ]


def description_lines(rows: list[Row]) -> list[str]:
    """``kafka-topics.sh --describe``'s lines: a topic line, then one line per partition."""
    lines = []
    for r in rows:
        lines.append(f"Topic: {r['topic']}\tTopicId: {r['topic_id']}\tPartitionCount: "
                     f"{r['partitions']}\tReplicationFactor: {r['replication_factor']}\t"
                     "Configs: ")
        for p in range(r["partitions"]):
            racks = ",".join(r["racks"][p]) if r["racks"] else ""
            lines.append(f"\tTopic: {r['topic']}\tPartition: {p}\tLeader: none\tReplicas: "
                         f"\tIsr: \tRacks: {racks}")
    return lines


def check_create(partitions: int | None, replication_factor: int | None) -> None:
    """Kafka's own checks of ``--create``'s numbers, made before anything is sent."""
    if replication_factor is not None and not 1 <= replication_factor <= MAX_REPLICATION_FACTOR:
        raise AdminError(
            f"The replication factor must be between 1 and {MAX_REPLICATION_FACTOR} inclusive",
            Errors.INVALID_REPLICATION_FACTOR)
    if partitions is not None and partitions < 1:
        raise AdminError("The partitions must be greater than 0", Errors.INVALID_PARTITIONS)


def create_topic(cluster, name: str, partitions: int | None, replication_factor: int | None,
                 if_not_exists: bool = False) -> str | None:
    """Create ``name`` (``partitions`` defaults to 1, Kafka's ``num.partitions``); its id, or
    None when it existed and ``--if-not-exists`` was given."""
    check_create(partitions, replication_factor)
    try:
        return cluster.create_topic(name, partitions or 1)
    except CoordinatorError as e:
        if e.error == Errors.TOPIC_ALREADY_EXISTS and if_not_exists:
            return None
        raise _failed(e) from None


def alter_topics(cluster, pattern: str, partitions: int | None,
                 if_exists: bool = False) -> list[str]:
    """Grow every matching topic to ``partitions`` in total (Kafka's ``createPartitions``)."""
    if partitions is None:
        raise AdminError("--alter needs --partitions: Cohort's topics have no configs to alter",
                         Errors.INVALID_REQUEST)
    topics = _matching(cluster, pattern, if_exists)
    for t in topics:
        try:
            cluster.add_partitions(t.name, partitions)
        except CoordinatorError as e:
            raise _failed(e) from None
    return [t.name for t in topics]


def delete_topics(cluster, pattern: str, if_exists: bool = False) -> list[str]:
    """Delete every matching topic; groups subscribed to one lose its partitions at once."""
    topics = _matching(cluster, pattern, if_exists)
    for t in topics:
        try:
            cluster.delete_topic(t.name)
        except CoordinatorError as e:
            raise _failed(e) from None
    return [t.name for t in topics]


def _failed(e: CoordinatorError) -> AdminError:
    return AdminError(f"{FAILED}{e.message or e.error.name}", e.error, prefix="")
