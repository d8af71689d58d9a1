"""A group type is one package and one row (DESIGN.md, "Layout"): checked two ways.

1. A fake group type, registered as a row of the group-type table in this test and nowhere
   else, is hosted, replayed, listed, counted by the metrics, described by ``cohort groups`` and
   exported: the shard, the metrics, the admin tools and the state tables loop over the rows.
2. The modules that serve every type (the shard and its runtime, records and codec, listing,
   offsets, metrics, state tables, export, the admin tools and the CLI) name no group type: no
   row name in their code, no import of a type's package. (``protocol/context.py`` types the
   ports through which one type's rules reach another's, online migration; ``protocol/api.py``
   holds each type's requests' rows: both name types by design.)
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from actors.runtime import metrics as partition_metrics
from actors.runtime.metrics import PREFIX, PartitionMetrics
from actors.tools.admin_groups import describe_members, describe_state, list_groups
from actors.tools.state_tables import shard_tables
from protocol import group_types
from protocol import messages as m
from protocol.admin_view import AdminDescribe, GroupView, MemberView
from protocol.errors import Errors
from protocol.group_row import GroupType
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.actors.runtime.test_metrics import Recorded
from tests.actors.tools.test_cli import ShardCluster

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------ a fake group type, whole


@dataclass(frozen=True)
class NovelGroupKey:
    TYPE: ClassVar[int] = 250
    group_id: str


@dataclass(frozen=True)
class NovelGroupValue:
    epoch: int
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class NovelTimer:
    group_id: str


@dataclass
class NovelGroup:
    group_id: str
    group_epoch: int = 0
    members: dict[str, Any] = field(default_factory=dict)

    group_type = "novel"

    @property
    def state(self) -> str:
        return "stable" if self.members else "empty"


class NovelRules:
    """The rules a real type would have; this one only replays its one record."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard

    def replay(self, record: Record) -> None:
        gid = record.key.group_id
        if record.value is None:
            self.shard.groups.pop(gid, None)
            return
        group = self.shard.groups.setdefault(gid, NovelGroup(gid))
        group.group_epoch = record.value.epoch
        group.members = {mid: None for mid in record.value.members}

    def on_timer(self, key: NovelTimer) -> None:
        pass

    def on_metadata(self, groups: list) -> None:
        pass


def _describe_classic(shard: Any, group: NovelGroup,
                      history: list) -> m.DescribeGroupsResponseGroup:
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id, group_state=group.state, protocol_type="novel",
        protocol_data="novel-assignor", generation_id=group.group_epoch,
        members=[m.DescribedGroupMember(member_id=mid, client_id=f"client-{mid}",
                                        client_host="/10.0.0.9") for mid in sorted(group.members)],
        rebalance_history=history,
    )


def _admin_view(d: m.DescribeGroupsResponseGroup) -> GroupView:
    return GroupView(d.group_state, d.protocol_data, d.generation_id, None,
                     [MemberView(x.member_id, None, x.client_host, x.client_id, d.generation_id,
                                 [], None) for x in d.members])


NOVEL = GroupType(
    name="novel",
    metrics_label="novel",
    group_class=NovelGroup,
    states=("empty", "stable"),
    record_schemas={NovelGroupKey: NovelGroupValue},
    timer_key=NovelTimer,
    rules=NovelRules,
    replayer=lambda shard: shard.novel.replay,
    validate_offset_commit=lambda group, req: None,
    is_empty=lambda group: not group.members,
    tombstones=lambda group: [Record(NovelGroupKey(group.group_id), None)],
    subscribed_topics=lambda group, image, strict: set(),
    describe_classic=_describe_classic,
    list_protocol_type=lambda group: "novel",
    classic_host=None,
    admin=AdminDescribe(lambda gid: m.DescribeGroupsRequest(groups=[gid]), _admin_view),
)


def register(monkeypatch: pytest.MonkeyPatch, row: GroupType) -> None:
    """Add ``row`` to the group-type table as if ``group_types.py`` listed it: the table and
    every index derived from it, wherever a module holds them."""
    rows = (*group_types.GROUP_TYPES, row)
    new = {
        "GROUP_TYPES": rows,
        "BY_NAME": {r.name: r for r in rows},
        "BY_RECORD_KEY": {k: r for r in rows for k in r.record_keys},
        "ALL_STATES": tuple(dict.fromkeys(s for r in rows for s in r.states)),
        "RECORD_SCHEMAS": {**group_types.RECORD_SCHEMAS, **row.record_schemas},
    }
    old = {name: getattr(group_types, name) for name in new}
    for module in list(sys.modules.values()):
        for attr, value in list(vars(module).items()) if module is not None else ():
            for name, before in old.items():
                if value is before:
                    monkeypatch.setattr(module, attr, new[name])


@pytest.fixture
def novel_shard(monkeypatch) -> GroupCoordinatorShard:
    register(monkeypatch, NOVEL)
    shard = GroupCoordinatorShard()
    shard.replay(Record(NovelGroupKey("n1"), NovelGroupValue(4, ("a", "b"))))
    return shard


def test_a_new_row_is_hosted_and_listed_by_its_name(novel_shard):
    assert novel_shard.novel.shard is novel_shard  # its rules, built from its row
    (listed,) = novel_shard.handle(m.ListGroupsRequest(types_filter=["novel"])).response.groups
    assert (listed.group_id, listed.group_type, listed.protocol_type, listed.group_state) == (
        "n1", "novel", "novel", "stable")


def test_a_new_row_is_counted_by_the_metrics_under_its_label(novel_shard, monkeypatch):
    monkeypatch.setattr(partition_metrics.metrics, "Gauge", Recorded)
    monkeypatch.setattr(partition_metrics.metrics, "Counter", Recorded)
    Recorded.by_name = {}
    PartitionMetrics(0).groups(*novel_shard.census())
    assert Recorded.by_name[PREFIX + "group_count"].value(protocol="novel") == 1.0


def test_a_new_row_is_described_by_the_admin_tools(novel_shard):
    cluster = ShardCluster(novel_shard)
    assert [(r["group"], r["type"]) for r in list_groups(cluster)] == [("n1", "novel")]
    [state], _ = describe_state(cluster, "n1")
    assert (state["type"], state["state"], state["assignment_strategy"], state["members"],
            state["group_epoch"]) == ("novel", "stable", "novel-assignor", 2, 4)
    members, _ = describe_members(cluster, "n1")
    assert [(r["consumer_id"], r["client_id"]) for r in members] == [
        ("a", "client-a"), ("b", "client-b")]


def test_a_new_row_is_exported_and_deleted_like_any_other(novel_shard):
    (row,) = shard_tables(novel_shard)["groups"].to_pylist()
    assert (row["group_id"], row["group_type"], row["protocol_type"], row["member_count"]) == (
        "n1", "novel", "novel", 2)
    refused = novel_shard.handle(m.DeleteGroupsRequest(["n1"]))
    assert refused.response.results[0].error_code == Errors.NON_EMPTY_GROUP
    assert refused.records == []
    novel_shard.replay(Record(NovelGroupKey("n1"), NovelGroupValue(5)))
    done = novel_shard.handle(m.DeleteGroupsRequest(["n1"]))
    assert done.response.results[0].error_code == Errors.NONE
    assert done.records == [Record(NovelGroupKey("n1"), None)] and not novel_shard.groups


# ------------------------------------------------------------------ no module names a type

# The modules every group type goes through: the shard and its runtime, records and their
# codec, the tables derived from the rows, and the tools that show or export every group.
SHARED = [
    "protocol/shard.py", "protocol/records.py", "protocol/codec.py", "protocol/listing.py",
    "protocol/group_row.py", "protocol/admin_view.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "protocol/offsets").glob("*.py")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "actors/runtime").glob("*.py")),
    "actors/tools/state_tables.py", "actors/tools/export.py", "actors/tools/admin.py",
    "actors/tools/admin_groups.py", "actors/tools/admin_offsets.py", "actors/tools/cli.py",
]
TYPE_PACKAGES = ("protocol.consumer", "protocol.classic", "protocol.connect", "protocol.share")
# Imports of a type's package a shared module may make, and why.
ALLOWED = {
    # kafka-consumer-groups' --validate-regex checks a pattern as a consumer's subscription is.
    ("actors/tools/admin_groups.py", "protocol.consumer.regex"),
    ("actors/tools/admin_groups.py", "protocol.consumer.regex.InvalidRegex"),
    ("actors/tools/admin_groups.py", "protocol.consumer.regex.compile_topic_regex"),
    ("actors/tools/admin_groups.py", "protocol.consumer.regex.matching_topics"),
}


def _code_strings(tree: ast.AST) -> set[str]:
    """String constants of the code, docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def _type_imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return {n for n in names if n.startswith(TYPE_PACKAGES) and n not in TYPE_PACKAGES}


@pytest.mark.parametrize("path", SHARED)
def test_a_module_every_type_goes_through_names_no_group_type(path: str):
    tree = ast.parse((ROOT / path).read_text())
    names = {row.name for row in group_types.GROUP_TYPES}
    names |= {row.metrics_label for row in group_types.GROUP_TYPES}
    assert _code_strings(tree) & names == set(), f"{path} names a group type"
    imports = {i for i in _type_imports(tree) if (path, i) not in ALLOWED}
    assert imports == set(), f"{path} imports a type's package"


def test_the_table_lists_each_types_own_row():
    for row in group_types.GROUP_TYPES:
        package = sys.modules[f"protocol.{row.name}.row"]
        assert package.ROW is row
        assert all(k.__module__ == f"protocol.{row.name}.records" for k in row.record_keys)

