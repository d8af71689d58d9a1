"""``cohort groups --reset-offsets``: moving a group's committed offsets, as an admin.

A reset is the one admin command that rewrites what consumers will resume from, so it is kept
apart from the read-only views: it is refused unless the group is inactive (a running member
would commit over it), every partition it names must exist, and it is planned first (the plan
is what ``--dry-run`` prints and ``--execute`` commits, all in one OffsetCommit).
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.tools.admin import AdminError, Columns, Row, kafka_error, raise_for
from actors.tools.admin_groups import committed_offsets, listed_group
from protocol import messages as m
from protocol.errors import Errors
from protocol.group_states import kafka_state_name
from protocol.group_types import BY_NAME

RESET_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("NEW-OFFSET", "new_offset"),
]

INACTIVE_STATES = ("empty", "dead")


def plan_reset(cluster, group_id: str, topic_specs: Sequence[str], to: str,
               offset: int | None = None) -> list[Row]:
    """The offsets a reset would commit, refused unless the group is inactive.

    ``to`` is ``earliest`` (0), ``offset`` (``offset``) or ``latest``: Cohort keeps no log,
    so "latest" is the highest offset any group committed for the partition (a lower bound
    of the log end), 0 for a partition nobody committed. ``topic_specs`` are ``topic`` or
    ``topic:0,2``, as Kafka's ``--topic``.
    """
    group = listed_group(cluster, group_id)
    if group.group_state not in INACTIVE_STATES:
        raise AdminError(
            f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
            f"current state is {kafka_state_name(group.group_state)}.",
            Errors.NON_EMPTY_GROUP,
        )
    partitions = _reset_partitions(cluster.topics(), topic_specs)
    if to == "latest":
        latest = _highest_committed(cluster, group_id)
        targets = {tp: latest.get(tp, 0) for tp in partitions}
    elif to == "earliest":
        targets = dict.fromkeys(partitions, 0)
    elif to == "offset":
        if type(offset) is not int or offset < 0:
            raise AdminError(f"--to-offset must be a non-negative integer, got {offset!r}.",
                             Errors.INVALID_COMMIT_OFFSET_SIZE)
        targets = dict.fromkeys(partitions, offset)
    else:
        raise ValueError(f"unknown reset target {to!r}")
    return [
        {"group": group_id, "topic": t, "partition": p, "new_offset": targets[(t, p)]}
        for t, p in partitions
    ]


def _reset_partitions(topics: list, specs: Sequence[str]) -> list[tuple[str, int]]:
    sizes = {t.name: t.num_partitions for t in topics}
    out: set[tuple[str, int]] = set()
    for spec in specs:
        name, _, wanted = spec.partition(":")
        if name not in sizes:
            raise AdminError(f"Topic '{name}' does not exist.", Errors.UNKNOWN_TOPIC_OR_PARTITION)
        every = range(sizes[name])
        try:
            chosen = [int(p) for p in wanted.split(",")] if wanted else list(every)
        except ValueError:
            raise AdminError(f"Bad partition list in '{spec}': use topic:0,1,2.",
                             Errors.INVALID_REQUEST) from None
        bad = [p for p in chosen if p not in every]
        if bad:
            raise AdminError(f"Topic '{name}' has no partition {bad[0]} "
                             f"(it has {sizes[name]}).", Errors.UNKNOWN_TOPIC_OR_PARTITION)
        out.update((name, p) for p in chosen)
    return sorted(out)


def _highest_committed(cluster, group_id: str) -> dict[tuple[str, int], int]:
    """The highest offset any group (every listed one, and ``group_id``) committed, per
    partition: the furthest anyone is known to have read."""
    highest: dict[tuple[str, int], int] = {}
    # Only the groups of a type that commits offsets (OffsetFetch to a share group is
    # GROUP_ID_NOT_FOUND, as in Kafka; a Connect group keeps none).
    listed = {g.group_id for g in cluster.list_groups() if BY_NAME[g.group_type].keeps_offsets}
    for gid in sorted(listed | {group_id}):
        for tp, off in committed_offsets(cluster, gid).items():
            highest[tp] = max(off, highest.get(tp, 0))
    return highest


def execute_reset(cluster, group_id: str, plan: list[Row]) -> None:
    """Commit the plan as an admin commit (no member, generation -1): all or nothing is the
    coordinator's to say; any partition it refuses is reported with its error."""
    by_topic: dict[str, list[m.OffsetCommitRequestPartition]] = {}
    for r in plan:
        by_topic.setdefault(r["topic"], []).append(
            m.OffsetCommitRequestPartition(r["partition"], r["new_offset"])
        )
    req = m.OffsetCommitRequest(
        group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
        topics=[m.OffsetCommitRequestTopic(t, ps) for t, ps in sorted(by_topic.items())],
    )
    resp = cluster.call(req)
    raise_for(resp.error_code, resp.error_message,
               f"Resetting the offsets of group '{group_id}' failed")
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code != Errors.NONE:
                error = kafka_error(p.error_code)
                raise AdminError(
                    f"Resetting the offset of {t.name}-{p.partition_index} for group "
                    f"'{group_id}' failed: {error.name}", error,
                )

