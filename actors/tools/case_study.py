"""``cohort case-study``: seed 002's "Basic" case study, played against the real coordinator core.

The case study drives ``GroupCoordinatorShard`` directly: three members
join a group subscribed to ``foo`` (3 partitions) one after another, and after each step the
group is printed in the seed's notation, so the output can be read side by side with the seed.
"""

from __future__ import annotations

from protocol import messages as m
from protocol import partitions as pm
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

GROUP = "demo-group"


class _Client:
    """The client half of KIP-848 at its simplest: adopt epochs, give up what is revoked."""

    def __init__(self, shard: GroupCoordinatorShard, name: str) -> None:
        self.shard, self.name, self.epoch, self.owned = shard, name, 0, {}

    def heartbeat(self) -> str:
        joining = self.epoch == 0
        req = m.ConsumerGroupHeartbeatRequest(
            group_id=GROUP,
            member_id=self.name,
            member_epoch=self.epoch,
            rebalance_timeout_ms=60_000 if joining else -1,
            subscribed_topic_names=["foo"] if joining else None,
            topic_partitions=pm.to_wire(self.owned),
        )
        resp = self.shard.handle(req).response
        assert resp.error_code == Errors.NONE, resp
        self.epoch = resp.member_epoch
        if resp.assignment is None:
            return f"{self.name} heartbeats: nothing changes"
        given = pm.from_wire(resp.assignment.assigned_topic_partitions)
        revoked = pm.minus(self.owned, given)
        added = pm.minus(given, self.owned)
        self.owned = given
        pending = pm.from_wire(resp.assignment.pending_topic_partitions)
        words = [f"{self.name} heartbeats: epoch {self.epoch}"]
        if revoked:
            words.append(f"revoke {_names(revoked)}")
        if added:
            words.append(f"gets {_names(added)}")
        if pending:
            words.append(f"waits for {_names(pending)}")
        return ", ".join(words)


def _names(parts: pm.PartitionMap) -> str:
    return "[" + ", ".join(f"foo-{p}" for ps in parts.values() for p in ps) + "]"


def render(shard: GroupCoordinatorShard) -> str:
    g = shard.groups[GROUP]
    lines = [f"  Group (epoch={g.group_epoch}) state={g.state}"]
    lines.append(f"  Target Assignment (epoch={g.assignment_epoch})")
    for mid in sorted(g.target):
        lines.append(f"    {mid} - partitions={_names(g.target_of(mid))}")
    lines.append("  Member Assignment")
    for mid, mem in sorted(g.members.items()):
        revoking = mem.partitions_pending_revocation
        lines.append(
            f"    {mid} - epoch={mem.member_epoch}, partitions={_names(mem.assigned_partitions)}, "
            f"pending-partitions={_names(g.pending_of(mem))}"
            + (f", revoking={_names(revoking)}" if revoking else "")
        )
    return "\n".join(lines)


def run_basic_case_study(out=print) -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(metadata=MetadataImage([TopicMetadata("foo-id", "foo", 3)]))
    a, b, c = (_Client(shard, n) for n in "ABC")
    steps = [
        ("Member A joins; the coordinator bumps the epoch and assigns it everything.", [a]),
        ("Member B joins: A must revoke foo-2 before B can have it.", [b]),
        ("A heartbeats and is told to revoke foo-2.", [a]),
        ("A acknowledges the revocation and moves to epoch 2; foo-2 is released.", [a]),
        ("B heartbeats and gets foo-2.", [b]),
        ("Member C joins: A gives up foo-1 for C.", [c]),
        ("B heartbeats: nothing to revoke, it moves to epoch 3.", [b]),
        ("A heartbeats and is told to revoke foo-1.", [a]),
        ("A acknowledges; foo-1 is released.", [a]),
        ("C heartbeats and gets foo-1. Every member is at the group epoch.", [c]),
    ]
    out("Seed 002, 'Basic': a group subscribed to foo (3 partitions)\n")
    for i, (text, clients) in enumerate(steps, 1):
        out(f"Step {i}. {text}")
        for client in clients:
            out(f"  -> {client.heartbeat()}")
        out(render(shard) + "\n")
    return shard
