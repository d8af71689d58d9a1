"""The admin side of Cohort: what ``kafka-consumer-groups.sh`` and ``kafka-configs.sh`` do.

Each function takes a ``Cluster`` (or plain data), asks the coordinator through the same
requests Kafka's admin client sends (ListGroups, ConsumerGroupDescribe, DescribeGroups,
OffsetFetch, OffsetCommit, DeleteGroups, the controller's group configs) and returns rows:
plain dicts with snake_case keys, one per line of the table Kafka's tool would print. A
refusal raises ``AdminError`` carrying the Kafka error name, before anything is changed.
``format_table`` turns rows into the aligned text table; ``actors/cli.py`` only parses
arguments and prints.

Cohort keeps no log, only committed offsets: LOG-END-OFFSET and LAG are ``None`` ("-").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.consumer.regex import InvalidRegex, compile_topic_regex, matching_topics
from protocol.errors import CoordinatorError, Errors

Row = dict[str, Any]
Columns = Sequence[tuple[str, str]]  # (HEADER, row key)

# The columns of each view, with Kafka's headers.
LIST_COLUMNS: Columns = [("GROUP", "group"), ("TYPE", "type"), ("STATE", "state")]
OFFSETS_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("CURRENT-OFFSET", "current_offset"), ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"),
    ("CONSUMER-ID", "consumer_id"), ("HOST", "host"), ("CLIENT-ID", "client_id"),
]
MEMBERS_COLUMNS: Columns = [
    ("GROUP", "group"), ("CONSUMER-ID", "consumer_id"), ("GROUP-INSTANCE-ID", "group_instance_id"),
    ("HOST", "host"), ("CLIENT-ID", "client_id"), ("#PARTITIONS", "partitions"),
]
MEMBERS_VERBOSE_COLUMNS: Columns = [
    *MEMBERS_COLUMNS,
    ("CURRENT-EPOCH", "current_epoch"), ("CURRENT-ASSIGNMENT", "current_assignment"),
    ("TARGET-EPOCH", "target_epoch"), ("TARGET-ASSIGNMENT", "target_assignment"),
]
STATE_COLUMNS: Columns = [
    ("GROUP", "group"), ("COORDINATOR", "coordinator"),
    ("ASSIGNMENT-STRATEGY", "assignment_strategy"),
    ("STATE", "state"), ("#MEMBERS", "members"), ("GROUP-EPOCH", "group_epoch"),
    ("ASSIGNMENT-EPOCH", "assignment_epoch"),
]
REGEX_COLUMNS: Columns = [("TOPIC", "topic"), ("PARTITIONS", "partitions")]
RESET_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("NEW-OFFSET", "new_offset"),
]
EXPORT_COLUMNS: Columns = [("TABLE", "table"), ("ROWS", "rows"), ("PATH", "path")]
TIMELINE_COLUMNS: Columns = [
    ("OUT", "out"), ("MEMBERS", "members"), ("PARTITIONS", "partitions"),
    ("OWNERSHIPS", "ownerships"), ("REBALANCES", "rebalances"),
]
CONFIG_COLUMNS: Columns = [
    ("GROUP", "group"), ("CONFIG", "name"), ("VALUE", "value"), ("SOURCE", "source"),
]

# A consumer's timeline file holds at most this many events that we read (a bound on memory).
MAX_TIMELINE_EVENTS = 1_000_000


class AdminError(Exception):
    """A refusal, said the way the CLI prints it; ``error`` is the Kafka error, if there is one."""

    def __init__(self, message: str, error: Errors | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error = error

    def __str__(self) -> str:
        return f"{self.message} ({self.error.name})" if self.error is not None else self.message


def missing_group(group_id: str) -> AdminError:
    return AdminError(f"Consumer group '{group_id}' does not exist.", Errors.GROUP_ID_NOT_FOUND)


def _raise_for(error_code: int, message: str | None, what: str) -> None:
    if error_code != Errors.NONE:
        error = _error(error_code)
        raise AdminError(f"{what}: {message or error.name}", error)


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def kafka_state(state: str) -> str:
    """Cohort's ``preparing_rebalance`` as Kafka prints it: ``PreparingRebalance``."""
    return "".join(part.capitalize() for part in state.split("_")) if state else "-"


# --------------------------------------------------------------------------- tables


def format_table(columns: Columns, rows: Iterable[Row]) -> str:
    """An aligned text table, as Kafka's tools print them: ``None`` and ``""`` show as ``-``."""
    cells = [[h for h, _ in columns]]
    cells += [["-" if r.get(k) in (None, "") else str(r.get(k)) for _, k in columns]
              for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join(
        " ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def to_json(rows: object) -> str:
    return json.dumps(rows, indent=2, sort_keys=False, default=str)


# --------------------------------------------------------------------------- list


def list_groups(cluster, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[Row]:
    """Every group, filtered as ListGroups filters (states in either spelling; types
    ``consumer`` / ``classic``)."""
    try:
        listed = cluster.list_groups(states=states, types=types)
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None
    return [
        {"group": g.group_id, "type": g.group_type, "protocol_type": g.protocol_type,
         "state": g.group_state}
        for g in listed
    ]


def listed_group(cluster, group_id: str) -> m.ListedGroup:
    """The group's ListGroups entry (its type and state), or the missing-group error.

    A group known only by its committed offsets (Kafka's "simple" group: a consumer that
    commits without group management) has no group object, so ListGroups does not name it;
    it is shown as Kafka shows it, an empty classic group.
    """
    for g in cluster.list_groups():
        if g.group_id == group_id:
            return g
    if committed_offsets(cluster, group_id, missing_ok=True):
        return m.ListedGroup(group_id, "", "empty", "classic")
    raise missing_group(group_id)


# --------------------------------------------------------------------------- describe


@dataclasses.dataclass
class _Member:
    member_id: str
    instance_id: str | None
    host: str
    client_id: str
    epoch: int
    assignment: list[tuple[str, int]]
    target: list[tuple[str, int]] | None


@dataclasses.dataclass
class _Group:
    group_id: str
    group_type: str
    state: str
    coordinator: str  # the offsets partition actor that owns the group
    strategy: str
    group_epoch: int
    assignment_epoch: int | None
    members: list[_Member]


def _describe(cluster, group_id: str) -> _Group:
    """One group through the describe API of its type: ConsumerGroupDescribe for a KIP-848
    group, DescribeGroups for a classic one (ListGroups tells which)."""
    listed = listed_group(cluster, group_id)
    coordinator = f"offsets-{cluster.partition_for(group_id)}"
    if listed.group_type == "consumer":
        d = cluster.describe(group_id)
        if d.error_code == Errors.GROUP_ID_NOT_FOUND:
            raise missing_group(group_id)
        _raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
        return _Group(
            group_id, "consumer", d.group_state, coordinator, d.assignor_name, d.group_epoch,
            d.assignment_epoch,
            [
                _Member(
                    mem.member_id, mem.instance_id, mem.client_host, mem.client_id,
                    mem.member_epoch, _pairs(mem.assignment.topic_partitions),
                    _pairs(mem.target_assignment.topic_partitions),
                )
                for mem in d.members
            ],
        )
    resp = cluster.call(m.DescribeGroupsRequest(groups=[group_id]))
    d = resp.groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND and listed.group_state == "empty":
        return _Group(group_id, "classic", "empty", coordinator, "", -1, None, [])  # offsets only
    if d.error_code == Errors.GROUP_ID_NOT_FOUND or d.group_state == "dead":
        raise missing_group(group_id)
    _raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return _Group(
        group_id, "classic", d.group_state, coordinator, d.protocol_data, d.generation_id, None,
        [
            _Member(
                mem.member_id, mem.group_instance_id, mem.client_host, mem.client_id,
                d.generation_id, _classic_assignment(d.protocol_type, mem.member_assignment),
                None,
            )
            for mem in d.members
        ],
    )


def _pairs(tps: list[m.DescribedTopicPartitions]) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in tps for p in tp.partitions)


def _classic_assignment(protocol_type: str, data: bytes) -> list[tuple[str, int]]:
    """A classic member's partitions, when its group speaks the consumer protocol."""
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        assignment = decode_assignment(data)
    except ConsumerProtocolError:
        return []
    return sorted((t, p) for t, ps in assignment.assigned_partitions for p in ps)


def committed_offsets(cluster, group_id: str,
                      missing_ok: bool = False) -> dict[tuple[str, int], int]:
    """Every offset the group committed (OffsetFetch with no topics: all of them).

    ``missing_ok``: a coordinator that cannot fetch offsets (UNSUPPORTED_VERSION) means none.
    """
    resp = cluster.call(m.OffsetFetchRequest(group_id=group_id))
    if missing_ok and resp.error_code == Errors.UNSUPPORTED_VERSION:
        return {}
    if resp.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    _raise_for(resp.error_code, resp.error_message,
               f"Fetching the offsets of group '{group_id}' failed")
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code == Errors.NONE and p.committed_offset >= 0:
                out[(t.name, p.partition_index)] = p.committed_offset
    return out


def describe_offsets(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    """Kafka's default describe view: a row per assigned or committed partition.

    Returns the rows and notes for a human ("has no active members"). A coordinator that
    cannot fetch offsets yet (UNSUPPORTED_VERSION) still gets the assignment, with a note.
    """
    group = _describe(cluster, group_id)
    notes = []
    try:
        offsets = committed_offsets(cluster, group_id)
    except AdminError as e:
        if e.error != Errors.UNSUPPORTED_VERSION:
            raise
        offsets = {}
        notes.append(f"Warning: committed offsets are unavailable: {e}")
    if not group.members:
        notes.append(f"Consumer group '{group_id}' has no active members.")
    rows = []
    for mem in group.members:
        for topic, p in mem.assignment:
            rows.append(_offset_row(group_id, topic, p, offsets.pop((topic, p), None), mem))
    rows += [_offset_row(group_id, t, p, off, None) for (t, p), off in offsets.items()]
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    return rows, notes


def _offset_row(group_id: str, topic: str, partition: int, offset: int | None,
                mem: _Member | None) -> Row:
    return {
        "group": group_id, "topic": topic, "partition": partition, "current_offset": offset,
        "log_end_offset": None, "lag": None,
        "consumer_id": mem.member_id if mem else None, "host": mem.host if mem else None,
        "client_id": mem.client_id if mem else None,
    }


def describe_members(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    group = _describe(cluster, group_id)
    notes = [] if group.members else [f"Consumer group '{group_id}' has no active members."]
    rows = [
        {
            "group": group_id, "consumer_id": mem.member_id, "group_instance_id": mem.instance_id,
            "host": mem.host, "client_id": mem.client_id, "partitions": len(mem.assignment),
            "current_epoch": mem.epoch, "current_assignment": assignment_text(mem.assignment),
            "target_epoch": group.assignment_epoch,
            "target_assignment": None if mem.target is None else assignment_text(mem.target),
        }
        for mem in group.members
    ]
    return rows, notes


def describe_state(cluster, group_id: str) -> tuple[list[Row], list[str]]:
    group = _describe(cluster, group_id)
    return [{
        "group": group_id, "type": group.group_type, "coordinator": group.coordinator,
        "assignment_strategy": group.strategy or None, "state": group.state,
        "members": len(group.members), "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
    }], []


def assignment_text(pairs: list[tuple[str, int]]) -> str:
    """``foo:0,1;bar:2``, as Kafka's ``--members --verbose`` prints an assignment."""
    by_topic: dict[str, list[int]] = {}
    for t, p in pairs:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def display_rows(rows: list[Row]) -> list[Row]:
    """Rows for a human: states spelled as Kafka spells them."""
    return [dict(r, state=kafka_state(r["state"])) if "state" in r else r for r in rows]


# --------------------------------------------------------------------------- regex


def check_regex(pattern: str) -> None:
    """RE2, as the coordinator compiles a SubscribedTopicRegex; a bad one is refused."""
    try:
        compile_topic_regex(pattern)
    except InvalidRegex as e:
        raise AdminError(str(e), Errors.INVALID_REGULAR_EXPRESSION) from None


def validate_regex(pattern: str, topics: list) -> list[Row]:
    """The existing topics ``pattern`` matches (the whole name, as Kafka matches)."""
    check_regex(pattern)
    sizes = {t.name: t.num_partitions for t in topics}
    return [{"topic": t, "partitions": sizes[t]} for t in matching_topics(pattern, list(sizes))]


# --------------------------------------------------------------------------- reset


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
            f"current state is {kafka_state(group.group_state)}.",
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
    for gid in sorted({g.group_id for g in cluster.list_groups()} | {group_id}):
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
    _raise_for(resp.error_code, resp.error_message,
               f"Resetting the offsets of group '{group_id}' failed")
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code != Errors.NONE:
                error = _error(p.error_code)
                raise AdminError(
                    f"Resetting the offset of {t.name}-{p.partition_index} for group "
                    f"'{group_id}' failed: {error.name}", error,
                )


# --------------------------------------------------------------------------- delete


def delete_group(cluster, group_id: str) -> None:
    """DeleteGroups for one group: refused while it has members (NON_EMPTY_GROUP)."""
    resp = cluster.call(m.DeleteGroupsRequest(groups_names=[group_id]))
    result = next((r for r in resp.results if r.group_id == group_id), None)
    if result is None:
        raise AdminError(f"Group '{group_id}' could not be deleted: no result for it.",
                         Errors.UNKNOWN_SERVER_ERROR)
    if result.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    if result.error_code == Errors.NON_EMPTY_GROUP:
        raise AdminError(f"Group '{group_id}' could not be deleted: it is not empty "
                         f"(it has active members).", Errors.NON_EMPTY_GROUP)
    _raise_for(result.error_code, result.error_message,
               f"Group '{group_id}' could not be deleted")


# --------------------------------------------------------------------------- configs


def config_names() -> dict[str, str]:
    """Kafka's group config names -> ``GroupConfig`` fields (``consumer.session.timeout.ms``
    -> ``consumer_session_timeout_ms``)."""
    return {f.name.replace("_", "."): f.name for f in dataclasses.fields(GroupConfig)}


def describe_configs(group_id: str, current: GroupConfig, broker: CoordinatorConfig,
                     include_defaults: bool = False) -> list[Row]:
    """The group's dynamic configs (and, with ``include_defaults``, the broker defaults the
    others fall back to), as ``kafka-configs --describe [--all]`` lists them."""
    rows = []
    for name, field_name in config_names().items():
        value = getattr(current, field_name)
        if value is not None:
            rows.append({"group": group_id, "name": name, "value": value,
                         "source": "DYNAMIC_GROUP_CONFIG"})
        elif include_defaults:
            rows.append({"group": group_id, "name": name,
                         "value": getattr(broker, f"group_{field_name}", None),
                         "source": "DEFAULT_CONFIG"})
    return rows


def parse_config_pairs(text: str) -> dict[str, str]:
    """``k=v,k=v`` as ``--add-config`` takes it."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"Bad config '{item}': use name=value.", Errors.INVALID_CONFIG)
        out[key.strip()] = value.strip()
    return out


def altered_config(current: GroupConfig, add: dict[str, str], delete: Iterable[str]) -> GroupConfig:
    """``current`` with ``add`` set and ``delete`` back to the broker default; unknown names
    and non-integer values are refused (INVALID_CONFIG) before anything is sent."""
    names = config_names()
    changes: dict[str, int | None] = {}
    for key in [*add, *delete]:
        if key not in names:
            raise AdminError(
                f"Unknown group config name: {key} (known: {', '.join(sorted(names))}).",
                Errors.INVALID_CONFIG,
            )
    for key, value in add.items():
        try:
            changes[names[key]] = int(value)
        except ValueError:
            raise AdminError(f"Invalid value {value} for configuration {key}: not an integer.",
                             Errors.INVALID_CONFIG) from None
    for key in delete:
        changes[names[key]] = None
    return dataclasses.replace(current, **changes)


def alter_configs(cluster, group_id: str, add: dict[str, str],
                  delete: Iterable[str]) -> GroupConfig:
    """Read, change, write the group's dynamic config; the controller validates the result
    against the broker's bounds (INVALID_CONFIG). Group configs need no existing group."""
    new = altered_config(group_config(cluster, group_id), add, list(delete))
    try:
        cluster.set_group_config(group_id, **dataclasses.asdict(new))
    except CoordinatorError as e:
        raise AdminError(e.message or e.error.name, e.error) from None
    return new


def group_config(cluster, group_id: str) -> GroupConfig:
    import ray

    from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE

    controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
    return ray.get(controller.group_config.remote(group_id))


# --------------------------------------------------------------------------- timelines


def load_timelines(directory: str | Path, group_id: str | None = None) -> dict[str, list[dict]]:
    """The JSON-lines files ``ConsumerClient(timeline_path=...)`` appends to, one per consumer
    (named by its file), keeping the events of ``group_id``; ordered by time."""
    root = Path(directory)
    if not root.is_dir():
        raise AdminError(f"Timeline directory '{directory}' does not exist.")
    out: dict[str, list[dict]] = {}
    for path in sorted(p for p in root.iterdir() if p.suffix in (".jsonl", ".json")):
        events = []
        with path.open() as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if len(events) >= MAX_TIMELINE_EVENTS:
                    break
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as err:
                    raise AdminError(f"{path}:{n}: not a JSON line ({err.msg}).") from None
                if group_id is None or e.get("group_id", group_id) == group_id:
                    e["partitions"] = [tuple(tp) for tp in e.get("partitions", [])]
                    events.append(e)
        if events:
            out[path.stem] = sorted(events, key=lambda e: e.get("t", 0))
    if not out:
        which = f" for group '{group_id}'" if group_id else ""
        raise AdminError(f"No timeline events{which} in '{directory}'.")
    return out


def rebalance_history(cluster, group_id: str) -> list[dict]:
    """Why the group rebalanced, as DescribeGroups reports it (KIP-800 causes: classic groups
    and classic members of a consumer group; ``time_ms`` on the coordinator's clock)."""
    d = cluster.call(m.DescribeGroupsRequest(groups=[group_id])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(group_id)
    _raise_for(d.error_code, d.error_message, f"Describe of group '{group_id}' failed")
    return [dataclasses.asdict(c) for c in d.rebalance_history]
