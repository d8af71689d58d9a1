"""A group as ``cohort groups --describe`` shows it, whatever its type: the admin half of a row.

Kafka has one describe API per group type (ConsumerGroupDescribe, DescribeGroups,
ShareGroupDescribe, Cohort's ConnectGroupDescribe) and one admin tool per type; Cohort's tool
(``actors/tools/admin_groups.py``) shows every group through one view. Each row says how its
groups are described (``AdminDescribe``: the request, and its reply's entry as a ``GroupView``)
and may show a table of its own instead of the offsets or members one (``details``: a share
group's share-partitions, a Connect group's workers). All of it is pure: a detail asks a
running Cohort only through an ``AdminPort`` the tools hand it, and refuses with a
``CoordinatorError`` the tools print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn, Protocol

from protocol import messages as m
from protocol.errors import CoordinatorError, Errors

Columns = Sequence[tuple[str, str]]  # (HEADER, row key), as Kafka's tools print them
Row = dict[str, Any]


@dataclass(frozen=True)
class MemberView:
    member_id: str
    instance_id: str | None
    host: str
    client_id: str
    epoch: int
    assignment: list[tuple[str, int]]  # (topic, partition), or (connector, task) for work
    target: list[tuple[str, int]] | None  # None: the type keeps no target apart


@dataclass(frozen=True)
class GroupView:
    state: str
    strategy: str  # the assignor, or a classic group's protocol
    group_epoch: int
    assignment_epoch: int | None  # None: the type has no separate target epoch
    members: list[MemberView]


class DetailTable(NamedTuple):
    """A table a type shows of its own: its columns, rows and the notes above it."""

    columns: Columns
    rows: list[Row]
    notes: list[str]


class AdminPort(Protocol):
    """What a row's admin detail may ask of a running Cohort (a ``Cluster``, in the tools)."""

    def call(self, request: object) -> object:
        """The request, routed to its group's coordinator; its reply."""

    def query(self, group_id: str, fn: Callable[[Any], Any]) -> Any:
        """``fn(shard)`` in the partition hosting ``group_id``, between two turns (a pure read:
        ``fn`` must pickle, to travel to the partition's actor)."""


# (port, the group's ListGroups entry, now in ms) -> the type's own table for a view, or None:
# the default one.
Detail = Callable[[AdminPort, m.ListedGroup, int], DetailTable | None]


@dataclass(frozen=True)
class AdminDescribe:
    """How ``cohort groups --describe`` shows a type's groups."""

    request: Callable[[str], object]  # group id -> the type's describe request for it
    # That request's entry for the group -> the view; None: the group is gone (dead).
    view: Callable[[Any], GroupView | None]
    # "offsets" | "members" -> a table the type shows instead of that view's default one.
    details: Mapping[str, Detail] = field(default_factory=dict)


def topic_partitions(tps: list[m.DescribedTopicPartitions]) -> list[tuple[str, int]]:
    """A described assignment as sorted (topic name, partition) pairs."""
    return sorted((tp.topic_name, p) for tp in tps for p in tp.partitions)


def missing_group(group_id: str) -> CoordinatorError:
    """Kafka's words for a group that is not there (kafka-consumer-groups.sh)."""
    message = f"Consumer group '{group_id}' does not exist."
    return CoordinatorError(Errors.GROUP_ID_NOT_FOUND, message)


def refuse_for(error_code: int, message: str | None, what: str) -> None:
    """Refuse (``what`` failed: why) for a reply's error code; nothing if NONE."""
    if error_code != Errors.NONE:
        raise_refusal(error_code, f"{what}: {message or _error(error_code).name}")


def raise_refusal(error_code: int, message: str) -> NoReturn:
    raise CoordinatorError(_error(error_code), message)


def _error(code: int) -> Errors:
    """The ``Errors`` member of a reply's code; a code Cohort does not know is a server error."""
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR
