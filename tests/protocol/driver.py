"""Test helpers that speak to a shard the way a KIP-848 client would.

``Member`` is a minimal client: it remembers its id, epoch and owned partitions, and when a
reply takes partitions away it drops them, so its next heartbeat acknowledges the revocation.
``snapshot`` renders a group in the seeds' case-study notation for direct comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol import messages as m
from protocol import partitions as pm
from protocol.consumer.records import ConsumerGroupTargetAssignmentMemberKey
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

REBALANCE_TIMEOUT_MS = 60_000


def image(**topics: int) -> MetadataImage:
    """``image(foo=3)``: topic ``foo`` with id ``foo-id`` and 3 partitions."""
    return MetadataImage([TopicMetadata(f"{name}-id", name, n) for name, n in topics.items()])


@dataclass
class Member:
    shard: GroupCoordinatorShard
    member_id: str
    group_id: str = "g"
    topics: list[str] = field(default_factory=lambda: ["foo"])
    epoch: int = 0
    owned: pm.PartitionMap = field(default_factory=dict)
    instance_id: str | None = None
    last: m.ConsumerGroupHeartbeatResponse | None = None

    def join(self, **extra) -> m.ConsumerGroupHeartbeatResponse:
        return self._send(self.join_request(**extra))

    def join_request(
        self, rebalance_timeout_ms: int = REBALANCE_TIMEOUT_MS, **extra
    ) -> m.ConsumerGroupHeartbeatRequest:
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=0,
            instance_id=self.instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=list(self.topics),
            topic_partitions=[],
            **extra,
        )

    def heartbeat(self, **extra) -> m.ConsumerGroupHeartbeatResponse:
        return self._send(self.heartbeat_request(**extra))

    def heartbeat_request(self, **extra) -> m.ConsumerGroupHeartbeatRequest:
        if self.epoch == 0:
            # Not given an epoch yet (e.g. a client-side assignment is pending): epoch 0 is a
            # (re)join, so the request restates everything, as a real client's does.
            return self.join_request(**extra)
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.epoch,
            topic_partitions=pm.to_wire(self.owned),
            **extra,
        )

    def leave(self, epoch: int = -1) -> m.ConsumerGroupHeartbeatResponse:
        req = m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
        )
        return self._send(req)

    def _send(self, req: m.ConsumerGroupHeartbeatRequest) -> m.ConsumerGroupHeartbeatResponse:
        return self.accept(self.shard.handle(req).response)

    def accept(self, resp: m.ConsumerGroupHeartbeatResponse) -> m.ConsumerGroupHeartbeatResponse:
        """Take a reply as the client would: adopt the epoch, drop what was taken away."""
        self.last = resp
        if resp.error_code == Errors.NONE:
            if resp.member_id:
                self.member_id = resp.member_id
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.owned = pm.from_wire(resp.assignment.assigned_topic_partitions)
        elif resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.epoch, self.owned = 0, {}
        return resp


def heartbeat_rounds(*members: Member, rounds: int = 4) -> None:
    """Each member heartbeats in turn, ``rounds`` times: enough for a small group's steps."""
    for _ in range(rounds):
        for mem in members:
            mem.heartbeat()


def together(
    shard: GroupCoordinatorShard, calls: list[tuple[Member, m.ConsumerGroupHeartbeatRequest]]
) -> None:
    """Send several members' requests in one turn of the shard (``handle_batch``)."""
    res = shard.handle_batch([req for _, req in calls])
    for (member, _), (_, resp) in zip(calls, res.replies, strict=True):
        member.accept(resp)


def parts(topic: str, *ps: int) -> pm.PartitionMap:
    return {f"{topic}-id": tuple(ps)} if ps else {}


def snapshot(shard: GroupCoordinatorShard, group_id: str = "g") -> dict:
    """The group as seed 002 writes it: epochs, target, and each member's current assignment."""
    g = shard.groups[group_id]
    return {
        "group_epoch": g.group_epoch,
        "members": sorted(g.members),
        "target_epoch": g.assignment_epoch,
        "target": {mid: _names(g.target_of(mid)) for mid in sorted(g.target)},
        "current": {
            mid: (mem.member_epoch, _names(mem.assigned_partitions), _names(g.pending_of(mem)))
            for mid, mem in sorted(g.members.items())
        },
    }


def _names(p: pm.PartitionMap) -> list[str]:
    return [f"{t.removesuffix('-id')}-{n}" for t, ps in sorted(p.items()) for n in ps]


class TracedShard(GroupCoordinatorShard):
    """A shard that keeps every record it produced, to replay the states they pass through."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.journal: list = []

    def handle_batch(self, requests):
        res = super().handle_batch(requests)
        self.journal.extend(res.records)
        return res

    def tick(self, now_ms):
        res = super().tick(now_ms)
        self.journal.extend(res.records)
        return res

    def update_metadata(self, image):
        res = super().update_metadata(image)
        self.journal.extend(res.records)
        return res

    def load(self, records) -> None:
        """Start from a given state (a case study's first table), as a log load would."""
        for r in records:
            self.replay(r)
        self.journal.extend(records)

    def states(self, group_id: str = "g", metadata: MetadataImage | None = None) -> list[dict]:
        """Every distinct group state the journal passes through, in order.

        A target assignment is installed as one unit (its member records, then its epoch), as
        the seed's "computes and installs" is one step; no state is taken half-way through.
        """
        fresh = GroupCoordinatorShard(self.config, metadata or self.image)
        out: list[dict] = []
        for r in self.journal:
            fresh.replay(r)
            if isinstance(r.key, ConsumerGroupTargetAssignmentMemberKey) and r.value is not None:
                continue
            if group_id in fresh.groups:
                s = snapshot(fresh, group_id)
                if not out or out[-1] != s:
                    out.append(s)
        return out


def appears_in_order(expected: list[dict], states: list[dict]) -> bool:
    """Each expected state occurs among ``states``, in the given order."""
    it = iter(states)
    return all(any(s == e for s in it) for e in expected)


def state(group_epoch, target_epoch, target, current) -> dict:
    """A seed 002 table: ``current`` maps member -> (epoch, partitions, pending)."""
    return {
        "group_epoch": group_epoch,
        "members": sorted(current),
        "target_epoch": target_epoch,
        "target": target,
        "current": current,
    }
