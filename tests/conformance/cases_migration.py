"""Online migration between the protocols (seed 002): a classic group upgraded by a member of
the new protocol, classic members inside a consumer group, and the way back.

The classic members here subscribe with ConsumerProtocolSubscription bytes (``requests``), so
the coordinator can read their topics as Kafka's does when it converts a group.
"""

from __future__ import annotations

from tests.conformance.requests import (
    ack,
    cg_describe,
    classic_heartbeat,
    classic_join,
    classic_member,
    describe_groups,
    join,
    join_group,
    leave,
    leave_group,
    list_groups,
    protocols,
    sync_group,
)
from tests.conformance.script import BAR, Id, Script, script

# The classic member reads cf-bar and the new one cf-foo: the coordinator's assignor then has
# one choice, whatever the order of the member ids (a classic member's is the coordinator's
# own, random on each system).
ON_BAR = {"protocols": protocols(topics=[BAR])}


def _upgrades() -> list[Script]:
    return [
        script("a new-protocol member joining a stable classic group converts it",
               *classic_member("a", **ON_BAR), join("b"), cg_describe(), describe_groups(),
               list_groups()),
        script("the classic member of a converted group is told to rejoin",
               *classic_member("a", **ON_BAR), join("b"), classic_heartbeat("a"),
               cg_describe()),
        script("the classic member rejoins a converted group and gets its assignment",
               *classic_member("a", **ON_BAR), join("b"), classic_heartbeat("a"),
               join_group("a", member_id=Id("a"), **ON_BAR),
               sync_group("a"), ack("b"), ack("b"), cg_describe()),
        # Not compared (docs/decisions.md, "Differential conformance"): a new-protocol member
        # joining a classic group mid-rebalance converts it on Kafka 4.4 and waits on Cohort.
        script("a new-protocol member joining a classic group of another protocol type",
               *classic_member("a", protocol_type="connect"), join("b"), describe_groups()),
        script("a new-protocol member joining an emptied classic group",
               *classic_member("a"), leave_group("a"), join("b"), cg_describe(),
               describe_groups()),
        script("a static classic member replaced by a new-protocol member keeps its place",
               join_group("a", group_instance_id="i-1"),
               sync_group("a", group_instance_id="i-1", assignments=[
                   {"member_id": Id("a"), "assignment": b""}]),
               join("b", instance_id="i-1"), cg_describe()),
        script("the classic leader leaving a converted group leaves the new member alone",
               *classic_member("a", **ON_BAR), join("b"), leave_group("a"), ack("b"),
               cg_describe(), describe_groups()),
    ]


def _classic_members() -> list[Script]:
    """Classic members joining a group of the new protocol."""
    return [
        script("a classic member joins a consumer group",
               join("a"), *classic_join("b"), cg_describe(), describe_groups()),
        script("a classic member of a consumer group syncs and gets an assignment",
               join("a"), *classic_join("b"), ack("a"), ack("a"), sync_group("b"),
               classic_heartbeat("b"), cg_describe()),
        script("a classic member with another protocol type is refused by a consumer group",
               join("a"), join_group("b", protocol_type="connect")),
        script("a classic member offering only an unknown assignor joins a consumer group",
               join("a"), *classic_join("b", protocols=protocols("no-such-assignor"))),
        script("a classic member's heartbeat with a wrong generation in a consumer group",
               join("a"), *classic_join("b"), sync_group("b"),
               classic_heartbeat("b", generation_id=999)),
        script("a classic member leaves a consumer group",
               join("a"), *classic_join("b"), leave_group("b"), ack("a"), cg_describe()),
        script("an unknown classic member's sync in a consumer group",
               join("a"), sync_group("x", member_id="no-such-member", generation_id=1)),
        script("a classic heartbeat of an unknown member in a consumer group",
               join("a"), classic_heartbeat("x", member_id="no-such-member", generation_id=1)),
        script("a classic leave of an unknown member in a consumer group",
               join("a"), leave_group("x", members=[
                   {"member_id": "no-such-member", "group_instance_id": None, "reason": None}])),
    ]


def _without_assignments(reply: dict) -> dict:
    """DescribeGroups without the members' assignments: Kafka's downgrade gives each its
    target, Cohort what it holds (docs/decisions.md, "Differential conformance")."""
    group = dict(reply["groups"][0])
    group["members"] = [{k: v for k, v in x.items() if k != "member_assignment"}
                        for x in group["members"]]
    return group


def _downgrades() -> list[Script]:
    return [
        script("the last new-protocol member leaving downgrades the group to classic",
               join("a"), *classic_join("b"), sync_group("b"), leave("a"),
               describe_groups(view=_without_assignments), cg_describe(), list_groups()),
        script("a downgraded group's classic member rejoins",
               join("a"), *classic_join("b"), sync_group("b"), leave("a"),
               classic_heartbeat("b"), join_group("b", member_id=Id("b")),
               describe_groups(view=_without_assignments)),
        script("a consumer group whose last member left stays a consumer group",
               join("a"), leave("a"), cg_describe(), describe_groups(), list_groups()),
        script("a classic join to an empty consumer group",
               join("a"), leave("a"), *classic_join("b"), describe_groups(), cg_describe()),
    ]


CASES: list[Script] = [*_upgrades(), *_classic_members(), *_downgrades()]
