"""The admin side of groups: DescribeGroups, ListGroups, ConsumerGroupDescribe and
ShareGroupDescribe shapes, DeleteGroups and OffsetDelete on live and empty groups, and group
configs through DescribeConfigs / IncrementalAlterConfigs.
"""

from __future__ import annotations

from tests.conformance.requests import (
    ack,
    alter_configs,
    cg_describe,
    classic_member,
    commit,
    delete_groups,
    describe_configs,
    describe_groups,
    fetch_offsets,
    join,
    leave,
    list_groups,
    offset_delete,
    share_describe,
    share_join,
)
from tests.conformance.script import BAR, FOO, GROUP, GROUP2, Script, script

ADMIN_COMMIT = {"member_id": "", "generation_id_or_member_epoch": -1}
GROUP_CONFIG = 8  # DescribeConfigs' source of a group's own config
# The group configs both define (Kafka 4.4 has more: docs/decisions.md, "Differential
# conformance"; Cohort has Connect's scheduled rebalance delay).
BOTH_DEFINE = ["consumer.assignment.interval.ms",
               "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
               "share.auto.offset.reset", "share.delivery.count.limit",
               "share.assignment.interval.ms",
               "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
               "share.session.timeout.ms"]


def _describes() -> list[Script]:
    out = [
        script("describe groups of a group that does not exist", describe_groups()),
        script("consumer group describe of a group that does not exist", cg_describe()),
        script("share group describe of a group that does not exist", share_describe()),
        script("describe groups of a group that only holds offsets",
               commit("a", **ADMIN_COMMIT), describe_groups()),
        script("consumer group describe of a classic group", *classic_member("a"),
               cg_describe()),
        script("consumer group describe of a share group", share_join("a"), cg_describe()),
        script("share group describe of a consumer group", join("a"), share_describe()),
        script("describe groups of a share group", share_join("a"), describe_groups()),
        script("consumer group describe of two groups, one missing",
               join("a"), cg_describe(groups=[GROUP, GROUP2], to_bootstrap=True), groups=2),
        script("describe groups of two groups, one classic and one missing",
               *classic_member("a"), describe_groups(groups=[GROUP, GROUP2], to_bootstrap=True),
               groups=2),
        script("consumer group describe of an empty group id", cg_describe(groups=[""])),
        script("describe groups of an empty group id", describe_groups(groups=[""])),
        script("consumer group describe of a group with a regex member",
               join("a", subscribed_topic_names=None, subscribed_topic_regex="cf-nothing.*",
                    version=1), cg_describe()),
    ]
    for v in (0, 1, 2, 3, 4):
        out.append(script(f"v{v} describe groups of a stable classic group",
                          *classic_member("a"), describe_groups(version=v)))
    for v in (0, 1, 2, 3, 4):
        out.append(script(f"v{v} describe groups of a group that does not exist",
                          describe_groups(version=v)))
    return out


def _lists() -> list[Script]:
    """ListGroups as each type's groups see it (the conversation's own groups only)."""
    return [
        script("list groups shows a consumer group", join("a"), list_groups()),
        script("list groups shows a classic group", *classic_member("a"), list_groups()),
        script("list groups shows a share group", share_join("a"), list_groups()),
        script("list groups shows a group that only holds offsets",
               commit("a", **ADMIN_COMMIT), list_groups()),
        script("list groups filtered by the consumer type", join("a"),
               list_groups(types=["consumer"])),
        script("list groups filtered by the classic type", join("a"),
               list_groups(types=["classic"])),
        script("list groups filtered by the share type", share_join("a"),
               list_groups(types=["Share"])),
        script("list groups filtered by the stable state", join("a"),
               list_groups(states=["Stable"])),
        script("list groups filtered by the empty state", join("a"), leave("a"),
               list_groups(states=["Empty"])),
        script("list groups filtered by an unknown state", join("a"),
               list_groups(states=["NoSuchState"])),
        script("list groups filtered by an unknown type", join("a"),
               list_groups(types=["nosuchtype"])),
        script("v3 list groups of a consumer group", join("a"), list_groups(version=3)),
        script("v4 list groups filtered by state", join("a"),
               list_groups(version=4, states=["Stable"])),
    ]


def _deletes() -> list[Script]:
    return [
        script("deleting a live consumer group is refused",
               join("a"), delete_groups(), cg_describe()),
        script("deleting a consumer group whose members left",
               join("a"), commit("a"), leave("a"), delete_groups(), cg_describe(),
               fetch_offsets()),
        script("deleting a live classic group is refused",
               *classic_member("a"), delete_groups(), describe_groups()),
        script("deleting a group that only holds offsets",
               commit("a", **ADMIN_COMMIT), delete_groups(), fetch_offsets()),
        script("deleting a group that does not exist", delete_groups()),
        script("deleting a live share group is refused", share_join("a"), delete_groups()),
        script("deleting two groups, one missing",
               commit("a", **ADMIN_COMMIT), delete_groups(groups=[GROUP, GROUP2],
                                                          to_bootstrap=True), groups=2),
        script("deleting a group with an empty id", delete_groups(groups=[""])),
        script("offset delete of a topic a live consumer group subscribes to",
               join("a"), commit("a"), offset_delete(), fetch_offsets()),
        script("offset delete of a topic a live consumer group does not subscribe to",
               join("a"), commit("a", {BAR: {0: 5}}), offset_delete(topics={BAR: [0]}),
               fetch_offsets(topics={BAR: [0]})),
        script("offset delete on a consumer group whose members left",
               join("a"), commit("a"), leave("a"), offset_delete(), fetch_offsets()),
        script("offset delete on a group that only holds offsets",
               commit("a", **ADMIN_COMMIT), offset_delete(), fetch_offsets()),
        script("offset delete on a group that does not exist", offset_delete()),
        script("offset delete of an unknown topic",
               commit("a", **ADMIN_COMMIT), offset_delete(topics={"cf-missing": [0]})),
        script("offset delete of a live classic group's subscribed topic",
               *classic_member("a"), commit("a"), offset_delete(), fetch_offsets()),
        script("offset delete of a live classic group's other topic",
               *classic_member("a"), commit("a", {BAR: {1: 5}}),
               offset_delete(topics={BAR: [1]}), fetch_offsets(topics={BAR: [1]})),
        script("offset delete on a share group", share_join("a"), offset_delete()),
        script("offset delete of partitions never committed",
               commit("a", **ADMIN_COMMIT), offset_delete(topics={FOO: [1, 2]}),
               fetch_offsets()),
        script("a group deleted and joined again starts afresh",
               join("a"), leave("a"), delete_groups(), join("b"), ack("b"), cg_describe()),
    ]


def _set(reply: dict) -> bool:
    """``until``: the described config is the group's own (Kafka applies a change through its
    metadata log, a moment after IncrementalAlterConfigs answers)."""
    return all(c["config_source"] == GROUP_CONFIG for c in reply["results"][0]["configs"])


def _unset(reply: dict) -> bool:
    """``until``: the described config is no longer the group's own."""
    return all(c["config_source"] != GROUP_CONFIG for c in reply["results"][0]["configs"])


def _configs() -> list[Script]:
    session, interval = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
    share_interval = "share.heartbeat.interval.ms"
    return [
        script("describe configs of a group with none set",
               describe_configs(names=[session, interval])),
        script("describe configs of a group's every config both systems define",
               describe_configs(names=BOTH_DEFINE)),
        script("describe configs naming an unknown config",
               describe_configs(names=["no.such.config"])),
        script("set a group's session timeout and describe it",
               alter_configs(changes={session: "5000"}),
               describe_configs(names=[session], until=_set)),
        script("set a group's heartbeat interval and see it in the heartbeat",
               alter_configs(changes={interval: "200"}),
               describe_configs(names=[interval], until=_set), join("a")),
        script("set a session timeout below the broker's minimum",
               alter_configs(changes={session: "10"}), describe_configs(names=[session])),
        script("set a session timeout above the broker's maximum",
               alter_configs(changes={session: "999999"}), describe_configs(names=[session])),
        script("set a config that is not a number",
               alter_configs(changes={session: "soon"})),
        script("set an unknown group config", alter_configs(changes={"no.such.config": "1"})),
        script("delete a group config returns it to the default",
               alter_configs(changes={session: "5000"}),
               describe_configs(names=[session], until=_set),
               alter_configs(changes={session: None}),
               describe_configs(names=[session], until=_unset)),
        script("append to a group config is refused",
               alter_configs(changes={session: "5000"}, op=2)),
        script("subtract from a group config is refused",
               alter_configs(changes={session: "5000"}, op=3)),
        script("validate only does not set the config",
               alter_configs(changes={session: "5000"}, validate_only=True),
               describe_configs(names=[session])),
        script("set a share group's heartbeat interval",
               alter_configs(changes={share_interval: "200"}),
               describe_configs(names=[share_interval], until=_set), share_join("a")),
        script("set a share group's assignment interval",
               alter_configs(changes={"share.assignment.interval.ms": "2000"}),
               describe_configs(names=["share.assignment.interval.ms"], until=_set)),
        script("set a share group's assignment interval above the broker's maximum",
               alter_configs(changes={"share.assignment.interval.ms": "15001"}),
               describe_configs(names=["share.assignment.interval.ms"])),
        script("set a streams group's assignment interval above the broker's maximum",
               alter_configs(changes={"streams.assignment.interval.ms": "15001"}),
               describe_configs(names=["streams.assignment.interval.ms"])),
        script("set a consumer group's assignment interval above the broker's maximum",
               alter_configs(changes={"consumer.assignment.interval.ms": "15001"}),
               describe_configs(names=["consumer.assignment.interval.ms"])),
        script("set a share group's auto offset reset",
               alter_configs(changes={"share.auto.offset.reset": "earliest"}),
               describe_configs(names=["share.auto.offset.reset"], until=_set)),
        script("set a bad share auto offset reset",
               alter_configs(changes={"share.auto.offset.reset": "sometime"})),
        script("set configs of a group with an empty name",
               alter_configs(changes={session: "5000"}, group="")),
        script("a live group's session timeout changes",
               join("a"), alter_configs(changes={session: "6000"}),
               describe_configs(names=[session], until=_set)),
    ]


CASES: list[Script] = [*_describes(), *_lists(), *_deletes(), *_configs()]
