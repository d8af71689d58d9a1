"""Conversations as data: the steps a script sends, and the placeholders its bodies hold.

A script never names a member id, an epoch or a topic id by value: those differ between Kafka
and Cohort (ids are random, topic ids are each broker's own). It names them by what they are
(``Id("a")``: the member id alias ``a`` was given; ``Epoch("a", -1)``: one below the epoch ``a``
last saw; ``Topic("foo")``: this system's id of topic ``foo``), and the runner fills them in
from each system's own replies (``resolve``). So one script plays unchanged on both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

API_KEYS = {
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "CreateTopics": 19,
    "DescribeConfigs": 32,
    "DeleteGroups": 42,
    "IncrementalAlterConfigs": 44,
    "OffsetDelete": 47,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
    "ShareGroupHeartbeat": 76,
    "ShareGroupDescribe": 77,
    "ShareFetch": 78,
    "ShareAcknowledge": 79,
    "StreamsGroupHeartbeat": 88,
    "StreamsGroupDescribe": 89,
}
# APIs a client sends to any broker, not to the group's coordinator.
TO_BOOTSTRAP = frozenset({"Metadata", "ListGroups", "DescribeConfigs",
                          "IncrementalAlterConfigs", "CreateTopics", "FindCoordinator",
                          "ShareFetch", "ShareAcknowledge"})  # these: the partitions' leader


# ------------------------------------------------------------------------ placeholders


@dataclass(frozen=True)
class Group:
    """The conversation's ``n``-th group id (the same on both systems, fresh each run)."""

    n: int = 0


GROUP = Group(0)
GROUP2 = Group(1)

# The topics every conversation may use, made on both systems before the first one (names of
# their own: the session's Cohort holds other tests' topics too).
FOO, BAR, BAZ = "cf-foo", "cf-bar", "cf-baz"
TOPICS = {FOO: 3, BAR: 2, BAZ: 1}


@dataclass(frozen=True)
class Id:
    """The member id of ``alias``: the one its last reply gave, or (before any) one the
    client makes up, as a ConsumerGroupHeartbeat v1 client does (KIP-1082). A made-up id is a
    UUID whose first byte is the alias's first letter, so members sort alike on both systems
    (assignors order members by id: with random ids their choices could not be compared)."""

    alias: str


@dataclass(frozen=True)
class Epoch:
    """The member epoch (or classic generation) ``alias`` last saw, plus ``delta``."""

    alias: str
    delta: int = 0


@dataclass(frozen=True)
class Topic:
    """This system's topic id of the topic named ``name``."""

    name: str


@dataclass(frozen=True)
class Owned:
    """The partitions ``alias`` was last told it owns, as ConsumerGroupHeartbeat's
    ``topic_partitions`` (topic ids of this system): what a member acknowledges."""

    alias: str


@dataclass
class Context:
    """What a conversation has learnt on one system: ids, epochs, assignments by alias."""

    groups: list[str]
    topic_ids: dict[str, uuid.UUID]
    member_ids: dict[str, str] = field(default_factory=dict)
    epochs: dict[str, int] = field(default_factory=dict)
    owned: dict[str, list[dict]] = field(default_factory=dict)

    def member_id(self, alias: str) -> str:
        if alias not in self.member_ids:
            made = bytes([ord(alias[0]) % 256]) + uuid.uuid4().bytes[1:]
            self.member_ids[alias] = str(uuid.UUID(bytes=made))
        return self.member_ids[alias]


def resolve(value: Any, ctx: Context) -> Any:
    """``value`` with every placeholder replaced by this system's value."""
    if isinstance(value, dict):
        return {k: resolve(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, ctx) for v in value]
    if isinstance(value, Group):
        return ctx.groups[value.n]
    if isinstance(value, Id):
        return ctx.member_id(value.alias)
    if isinstance(value, Epoch):
        return ctx.epochs.get(value.alias, 0) + value.delta
    if isinstance(value, Topic):
        return ctx.topic_ids.get(value.name, uuid.UUID(int=0))  # a missing topic: no id
    if isinstance(value, Owned):
        return [dict(tp) for tp in ctx.owned.get(value.alias, [])]
    return value


# ------------------------------------------------------------------------------ steps


@dataclass(frozen=True)
class Step:
    """One request from ``alias`` (each alias has its own connection, as each member has).

    ``wait=False`` parks the reply (a classic JoinGroup that waits for the others) until a
    ``Receive`` for the alias. ``until`` re-sends the request while the reply (normalised)
    does not satisfy it, within the runner's deadline: the outcome compared is the one that
    satisfied it, never a reply that depended on timing. ``fields`` limits what is compared
    to those top-level fields of the reply, and ``view`` turns the normalised reply into what
    is compared (say, each member's partition count where the assignor may pick either of two
    balanced answers); ``record`` says whether the reply's member id and epoch become the
    alias's (False for a request made on someone else's behalf); ``to_bootstrap`` sends it to
    the bootstrap broker rather than the group's coordinator (an admin client's request for
    groups that may have different coordinators).
    """

    alias: str
    api: str
    body: dict
    version: int | None = None
    wait: bool = True
    until: Callable[[dict], bool] | None = None
    fields: tuple[str, ...] | None = None
    view: Callable[[dict], Any] | None = None
    record: bool = True
    to_bootstrap: bool = False  # an admin's request naming several groups: any broker routes


@dataclass(frozen=True)
class Receive:
    """Collect the parked reply of ``alias``'s last ``wait=False`` step (compared as that
    step says)."""

    alias: str


@dataclass(frozen=True)
class Poll:
    """Send ``steps`` again and again until ``until`` holds of the last one's (normalised)
    reply; only that last reply is compared. For an outcome that needs the members to keep
    heartbeating before an admin sees it (a share group's assignment, which Kafka gives only
    once its share coordinator has initialised the partitions in the background)."""

    steps: tuple[Step, ...]
    until: Callable[[dict], bool]


@dataclass(frozen=True)
class Script:
    """A named conversation: what it checks (``name``, read as behaviour) and its steps."""

    name: str
    steps: tuple[Step | Receive | Poll, ...]
    groups: int = 1

    def __str__(self) -> str:
        return self.name


def script(name: str, *steps: Step | Receive | Poll, groups: int = 1) -> Script:
    return Script(name, tuple(steps), groups)
