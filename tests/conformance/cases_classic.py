"""Classic groups: JoinGroup / SyncGroup / Heartbeat / LeaveGroup, with and without instance
ids (seeds 001 and 003; KIP-345 static membership, KIP-394 member ids, KIP-800 reasons).

Joins that wait for others are sent with ``wait=False`` and received once the group can
answer them; the session's classic initial rebalance delay (the same on both) ends a lone
member's first join.
"""

from __future__ import annotations

from tests.conformance.requests import (
    classic_heartbeat,
    classic_join,
    classic_member,
    describe_groups,
    join_group,
    leave_group,
    protocols,
    rebalancing,
    sync_group,
)
from tests.conformance.script import BAR, Epoch, Id, Receive, Script, script

ASSIGN_A = [{"member_id": Id("a"), "assignment": b"\x00\x01"}]


def _validation() -> list[Script]:
    bad = {
        "an empty group id": {"group_id": ""},
        "a session timeout below the minimum": {"session_timeout": 500},
        "a session timeout above the maximum": {"session_timeout": 1_900_000},
        "no protocols": {"protocols": []},
        "an empty protocol type": {"protocol_type": ""},
        "an unknown member id": {"member_id": "no-such-member"},
        "a reason": {"reason": "rebalance failed due to something"},
    }
    out = [script(f"join with {what}", join_group("a", **fields))
           for what, fields in bad.items()]
    out += [
        script("v3 join gets a member id at once (before KIP-394)",
               join_group("a", version=3), describe_groups()),
        script("v4 join is asked to come back with its member id (KIP-394)",
               join_group("a", version=4), describe_groups()),
        script("a join with an unknown member id to a live group",
               *classic_member("a"), join_group("x", member_id="no-such-member")),
        script("a join with another protocol type than the group's",
               *classic_member("a"), join_group("b", protocol_type="connect")),
        script("a join with no protocol in common with the group",
               *classic_member("a"), join_group("b", protocols=protocols("roundrobin"))),
        script("a join to a group another protocol type holds",
               *classic_member("a"), join_group("b", protocol_type="other")),
    ]
    return out


def _rebalances() -> list[Script]:
    return [
        script("a lone member joins, syncs and heartbeats",
               *classic_member("a"), classic_heartbeat("a"), describe_groups()),
        script("the leader's sync hands out the assignments",
               *classic_join("a"), sync_group("a", assignments=ASSIGN_A), describe_groups()),
        script("a second member's join rebalances the group",
               *classic_member("a"), *classic_join("b", wait=False),
               classic_heartbeat("a", until=rebalancing),
               join_group("a", member_id=Id("a"), wait=False),
               Receive("a"), Receive("b"), describe_groups()),
        script("both members sync after a rebalance",
               *classic_member("a"), *classic_join("b", wait=False),
               classic_heartbeat("a", until=rebalancing),
               join_group("a", member_id=Id("a"), wait=False), Receive("a"), Receive("b"),
               sync_group("b", wait=False),
               sync_group("a", assignments=[{"member_id": Id("a"), "assignment": b"a"},
                                            {"member_id": Id("b"), "assignment": b"b"}]),
               Receive("b"), classic_heartbeat("a"), classic_heartbeat("b"), describe_groups()),
        script("a heartbeat with an old generation is an illegal generation",
               *classic_member("a"), classic_heartbeat("a", generation_id=Epoch("a", -1))),
        script("a heartbeat with a newer generation is an illegal generation",
               *classic_member("a"), classic_heartbeat("a", generation_id=Epoch("a", 1))),
        script("a heartbeat from an unknown member",
               *classic_member("a"), classic_heartbeat("x", member_id="no-such-member",
                                                       generation_id=Epoch("a"))),
        script("a heartbeat to a group that does not exist",
               classic_heartbeat("a", member_id="m", generation_id=1)),
        script("a heartbeat before the sync of a completed join",
               *classic_join("a"), classic_heartbeat("a"), describe_groups()),
        script("a sync from an unknown member",
               *classic_member("a"), sync_group("x", member_id="no-such-member",
                                                generation_id=Epoch("a"))),
        script("a sync with an old generation",
               *classic_join("a"), sync_group("a", generation_id=Epoch("a", -1))),
        script("a sync naming another protocol",
               *classic_join("a"), sync_group("a", protocol_name="roundrobin")),
        script("a sync naming another protocol type",
               *classic_join("a"), sync_group("a", protocol_type="connect")),
        script("a sync to a group that does not exist",
               sync_group("a", member_id="m", generation_id=1)),
        script("a leader's rejoin with unchanged metadata in a stable group",
               *classic_member("a"), join_group("a", member_id=Id("a")), describe_groups()),
        script("a leave of the only member empties the group",
               *classic_member("a"), leave_group("a"), describe_groups()),
        script("a leave of an unknown member",
               *classic_member("a"), leave_group("x", members=[
                   {"member_id": "no-such-member", "group_instance_id": None, "reason": None}]),
               describe_groups()),
        script("a leave of a group that does not exist",
               leave_group("a", members=[{"member_id": "m", "group_instance_id": None,
                                          "reason": None}])),
        script("v2 leave of the only member",
               *classic_member("a"), leave_group("a", version=2, member_id=Id("a")),
               describe_groups()),
        script("a member leaving during a rebalance lets the others' joins complete",
               *classic_member("a"), *classic_join("b", wait=False),
               classic_heartbeat("a", until=rebalancing), leave_group("a"),
               Receive("b"), describe_groups()),
        script("a join with new metadata from a follower rebalances",
               *classic_member("a"), *classic_join("b", wait=False),
               classic_heartbeat("a", until=rebalancing),
               join_group("a", member_id=Id("a"), wait=False), Receive("a"), Receive("b"),
               join_group("b", member_id=Id("b"), protocols=protocols("range", topics=[BAR]),
                          wait=False),
               classic_heartbeat("a", until=rebalancing),
               join_group("a", member_id=Id("a"), wait=False),
               Receive("a"), Receive("b")),
    ]


def _static() -> list[Script]:
    def sj(alias, instance="i-1", **kw):
        return join_group(alias, group_instance_id=instance, **kw)

    return [
        script("a static member joins without a member id round trip",
               sj("a"), describe_groups()),
        script("a static member's new process takes its place and fences the old one",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               sj("b"), classic_heartbeat("a", group_instance_id="i-1"),
               describe_groups()),
        script("a static member rejoining with the same id gets the current generation",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               sj("a", member_id=Id("a")), describe_groups()),
        script("a heartbeat naming another member's instance id is fenced",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               classic_heartbeat("a", group_instance_id="i-2")),
        script("a static member leaves by its instance id",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               leave_group("a", members=[{"member_id": "", "group_instance_id": "i-1",
                                          "reason": None}]),
               describe_groups()),
        script("a leave naming an instance id with the wrong member id is fenced",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               leave_group("a", members=[{"member_id": "not-its-id", "group_instance_id": "i-1",
                                          "reason": None}]),
               describe_groups()),
        script("a leave of an unknown instance id",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               leave_group("a", members=[{"member_id": "", "group_instance_id": "i-9",
                                          "reason": None}])),
        script("a batch leave of a static and an unknown member",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               leave_group("a", members=[
                   {"member_id": "", "group_instance_id": "i-1", "reason": "bye"},
                   {"member_id": "ghost", "group_instance_id": None, "reason": None}]),
               describe_groups()),
        script("a sync naming another member's instance id is fenced",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-2")),
        script("a static leader rejoining with a restart keeps the generation",
               sj("a"), sync_group("a", assignments=ASSIGN_A, group_instance_id="i-1"),
               sj("a", member_id=Id("a"), reason="restart"), describe_groups()),
        script("a static member joining a group of a dynamic one",
               *classic_member("a"), sj("b", wait=False), classic_heartbeat("a", until=rebalancing),
               join_group("a", member_id=Id("a"), wait=False), Receive("a"), Receive("b"),
               describe_groups()),
    ]


CASES: list[Script] = [*_validation(), *_rebalances(), *_static()]
