"""Streams groups (KIP-1071, as Kafka 4.4 ships them), at StreamsGroupHeartbeat and
StreamsGroupDescribe v0 and v1: what each version's reply carries (v0's recovery lag is the
"legacy" int32 Kafka never fills, v1's the int64 lag and TopologyDescriptionRequired; describe
v1's assignor name and topology description status), the topology rules (a newer topology is
refused, an older one joins stale), and the errors of a wrong epoch and an unknown group.

The topology is stateless (one subtopology reading cf-foo), so no internal topic is made and
a join's outcome depends on the rules alone; the describe is compared without client hosts
(each broker sees the client's address its own way).
"""

from __future__ import annotations

from tests.conformance.requests import (
    alter_configs,
    describe_configs,
    streams_describe,
    streams_heartbeat,
    streams_join,
)
from tests.conformance.script import GROUP, Epoch, Poll, Script, script

VERSIONS = (0, 1)


# The initial rebalance delay the delay's conversations set (a group config): long enough that
# the heartbeats right after a join fall within it on a busy machine, short enough to wait out.
DELAY_MS = 2_500
ASSIGNMENT_DELAYED = 5


def no_delay() -> Poll:
    """The group's initial rebalance delay off (a group config, set before the group exists),
    so a join is assigned at once: the conversations that compare assignments."""
    return _delay_config("0")


def with_delay() -> Poll:
    """The group's initial rebalance delay at ``DELAY_MS`` (set before the group exists)."""
    return _delay_config(str(DELAY_MS))


DELAY_CONFIG = "streams.initial.rebalance.delay.ms"


def _delay_config(value: str) -> Poll:
    """Set the delay, then ask until the broker shows it: Kafka takes a group config from
    its metadata log after IncrementalAlterConfigs has answered, and a join sent before then
    met the old delay (a loaded run was told ASSIGNMENT_DELAYED after setting it to 0)."""
    def shown(reply: dict) -> bool:
        return any(c.get("name") == DELAY_CONFIG and c.get("value") == value
                   for r in reply.get("results") or [] for c in r.get("configs") or [])

    return Poll((alter_configs(changes={DELAY_CONFIG: value}),
                 describe_configs(names=[DELAY_CONFIG])), until=shown)


def delayed(reply: dict) -> bool:
    return any(s["status_code"] == ASSIGNMENT_DELAYED for s in reply.get("status") or [])


def assigned(reply: dict) -> bool:
    """The delay is over and the reply hands the member its tasks."""
    return not delayed(reply) and bool(reply.get("active_tasks"))


def over(reply: dict) -> bool:
    """The delay is over (whatever the reply hands out)."""
    return not delayed(reply)


def _described(reply: dict) -> dict:
    """A describe without each member's client host and id (the connection's own)."""
    groups = []
    for g in reply["groups"]:
        g = dict(g)
        g["members"] = [{k: v for k, v in x.items() if k not in ("client_host", "client_id")}
                        for x in g.get("members") or []]
        groups.append(g)
    return {"groups": groups}


def _at(version: int) -> list[Script]:
    v = f"v{version}"
    return [
        script(f"a streams member joins at {v} and is told Kafka's {v} reply",
               streams_join("a", version=version)),
        script(f"a second streams member joins at {v} beside the first",
               no_delay(), streams_join("a", version=version), streams_join("b", version=version)),
        script(f"a streams member heartbeats at {v} after joining",
               streams_join("a", version=version),
               streams_heartbeat("a", version=version, active_tasks=[], standby_tasks=[],
                                 warmup_tasks=[])),
        script(f"a streams join at {v} with a newer topology than the group's is refused",
               streams_join("a", version=version),
               streams_join("b", epoch=2, version=version)),
        script(f"a streams join at {v} with another topology at the group's epoch is refused",
               streams_join("a", version=version),
               streams_join("b", source="cf-bar", version=version)),
        script(f"a streams join at {v} with an older topology joins stale",
               no_delay(), streams_join("a", epoch=2, version=version),
               streams_join("b", epoch=1, version=version)),
        script(f"a streams heartbeat at {v} with a newer epoch is fenced",
               streams_join("a", version=version),
               streams_heartbeat("a", version=version, member_epoch=Epoch("a", 5),
                                 active_tasks=[], standby_tasks=[], warmup_tasks=[])),
        script(f"a streams heartbeat at {v} to no group is group id not found",
               streams_heartbeat("a", version=version, member_epoch=3, active_tasks=[],
                                 standby_tasks=[], warmup_tasks=[])),
        script(f"a streams member leaves at {v}",
               streams_join("a", version=version),
               streams_heartbeat("a", version=version, member_epoch=-1)),
        script(f"streams describe at {v} of a group and of no group",
               no_delay(), streams_join("a", version=1),
               streams_describe(groups=[GROUP, "cf-no-such-group"], version=version,
                                view=_described)),
    ]


def _delay() -> list[Script]:
    """The initial rebalance delay (Kafka 4.4): no target while it runs (the group epoch
    moves on, the assignment epoch and the members' epochs stay, ASSIGNMENT_DELAYED), then
    the target at the group epoch, with no bump."""
    return [
        script("a streams member joining during the initial delay waits with no tasks, "
               "then gets them at the group epoch",
               with_delay(), streams_join("a"), streams_heartbeat("a"),
               streams_heartbeat("a", until=assigned)),
        script("a second streams member joining during the initial delay bumps the group "
               "but waits with the first",
               with_delay(), streams_join("a"), streams_join("b"), streams_heartbeat("a"),
               streams_heartbeat("a", until=assigned), streams_heartbeat("b", until=assigned)),
        script("streams describe during the initial delay shows the group assigning at "
               "its first assignment epoch",
               with_delay(), streams_join("a"), streams_join("b"),
               streams_describe(version=1, view=_described)),
        script("streams describe after the initial delay shows the target at the group "
               "epoch",
               with_delay(), streams_join("a"), streams_join("b"),
               streams_heartbeat("a", until=assigned), streams_heartbeat("b", until=assigned),
               streams_describe(version=1, view=_described)),
        script("a streams member leaving during the initial delay bumps the group and "
               "the rest wait on",
               with_delay(), streams_join("a"), streams_join("b"),
               streams_heartbeat("b", member_epoch=-1), streams_heartbeat("a"),
               streams_heartbeat("a", until=assigned)),
        script("the last streams member leaving during the initial delay moves the "
               "assignment epoch, and the next join waits at it",
               with_delay(), streams_join("a"), streams_heartbeat("a", member_epoch=-1),
               streams_join("b"), streams_describe(version=1, view=_described),
               streams_heartbeat("b", until=assigned)),
        script("a streams member with a missing source topic waits out the initial delay, "
               "then is told the topic is missing",
               with_delay(), streams_join("a", source="cf-no-such-topic"),
               streams_heartbeat("a", until=over),
               streams_describe(version=1, view=_described)),
    ]


def _leave() -> list[Script]:
    """A leave (Kafka 4.4's ``streamsGroupFenceMember``): the member's records go and the group
    epoch is bumped, but no target is computed until the next heartbeat of any member (the
    describe shows the group assigning at the old assignment epoch), so a member back before
    then finds its tasks free; the last member leaving writes the target epoch at the bump."""
    return [
        script("a streams member leaving bumps the group and keeps its target until another "
               "member heartbeats",
               no_delay(), streams_join("a"), streams_join("b"),
               streams_heartbeat("b", member_epoch=-1),
               streams_describe(version=1, view=_described),
               streams_heartbeat("a"),
               streams_describe(version=1, view=_described)),
        script("a streams member back before the others heartbeat gets its old tasks back",
               no_delay(), streams_join("a"), streams_join("b"), streams_join("c"),
               streams_heartbeat("c", member_epoch=-1),
               streams_join("d", process_id="process-c"),
               streams_describe(version=1, view=_described)),
        script("the last streams member leaving moves the assignment epoch to its bump",
               no_delay(), streams_join("a"), streams_heartbeat("a", member_epoch=-1),
               streams_describe(version=1, view=_described)),
        # Kafka 4.4's TargetAssignmentBuilder gives the assignor what each member holds
        # (assignedTasks), not its target: b's target holds a task it has not taken yet,
        # which d, back on c's process, is given instead of one of b's (no member here
        # acknowledges a revocation, so a keeps what it must give up pending).
        script("a streams member back after another member's heartbeat is assigned from what "
               "the members hold, not from their targets",
               no_delay(), streams_join("a"), streams_join("b"), streams_join("c"),
               streams_heartbeat("c", member_epoch=-1), streams_heartbeat("a"),
               streams_join("d", process_id="process-c"),
               streams_describe(version=1, view=_described)),
    ]


CASES = [
    *_at(0), *_at(1), *_delay(), *_leave(),
    script("streams describe v1 asked for the topology description says none is stored",
           no_delay(), streams_join("a", version=1),
           streams_describe(version=1, include_topology_description=True, view=_described)),
]
