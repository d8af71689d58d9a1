"""The pure share member client half (``protocol/client/share_member.py``) against the real
shard, in simulated time: members join, fetch, acknowledge, leave and are fenced, and the
records they acquire obey the share invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol.client.share_member import ShareMemberClient
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import image

CONFIG = CoordinatorConfig(group_share_heartbeat_interval_ms=100,
                           group_share_min_heartbeat_interval_ms=100,
                           group_share_session_timeout_ms=1_000,
                           group_share_min_session_timeout_ms=1_000)
STEP_MS = 50


class Sim:
    """A shard, share members and a stream growing ``per_step`` records a step."""

    def __init__(self, per_step: int = 10) -> None:
        self.shard = GroupCoordinatorShard(config=CONFIG, metadata=image(foo=2), now_ms=0)
        self.now_ms = 0
        self.per_step = per_step
        self.members: dict[str, ShareMemberClient] = {}
        self.held: dict[tuple[str, int, int], str] = {}  # record -> member holding it
        self.acked: set[tuple[str, int, int]] = set()
        self.deliveries: list[tuple[str, tuple[str, int, int], int]] = []

    def end(self) -> int:
        return (self.now_ms // STEP_MS) * self.per_step

    def add(self, name: str) -> ShareMemberClient:
        c = ShareMemberClient("g", name, ["foo"])
        self.members[name] = c
        return c

    def step(self, ack: bool = True) -> None:
        self.now_ms += STEP_MS
        self.shard.tick(self.now_ms)
        now_s = self.now_ms / 1000
        for name, c in list(self.members.items()):
            hb = c.poll_heartbeat(now_s)
            if hb is not None:
                c.on_heartbeat(now_s, self.shard.handle(hb).response)
                if c.done or c.epoch == 0:  # left or fenced: the shard released its records
                    self.held = {r: h for r, h in self.held.items() if h != name}
            fetch = c.poll_fetch(now_s, self.end())
            if fetch is None:
                continue
            sent = {(t.topic_id, p.partition, o)
                    for t in fetch.topics for p in t.partitions for b in p.acknowledgements
                    for o in range(b.first_offset, b.last_offset + 1)}
            resp = self.shard.handle(fetch).response
            if resp.error_code == Errors.NONE:
                self.acked |= {r for r in sent if self._ack_ok(resp, r)}
            for rec in sent:
                self.held.pop(rec, None)
            if fetch.close_session:  # the session closed: the shard released the rest
                self.held = {r: h for r, h in self.held.items() if h != name}
            for a in c.on_fetch(now_s, resp):
                for o in range(a.first_offset, a.last_offset + 1):
                    rec = (a.topic_id, a.partition, o)
                    assert rec not in self.acked, f"{rec} delivered after its ack"
                    holder = self.held.get(rec)
                    assert holder is None or holder == name, f"{rec} held by {holder} too"
                    self.held[rec] = name
                    self.deliveries.append((name, rec, a.delivery_count))
                if ack:
                    c.acknowledge(a)

    @staticmethod
    def _ack_ok(resp: m.ShareFetchResponse, rec: tuple[str, int, int]) -> bool:
        return any(t.topic_id == rec[0] and p.partition == rec[1]
                   and p.acknowledge_error_code == Errors.NONE
                   for t in resp.topics for p in t.partitions)


def test_two_share_members_split_the_stream_and_never_see_an_acknowledged_record_again():
    sim = Sim()
    sim.add("a")
    sim.add("b")
    for _ in range(60):
        sim.step()
    assert {name for name, _, _ in sim.deliveries} == {"a", "b"}
    by_partition: dict[int, list[int]] = {}
    for _, (_, p, o), _ in sim.deliveries:
        by_partition.setdefault(p, []).append(o)
    for offsets in by_partition.values():  # none skipped, none twice
        assert sorted(offsets) == list(range(min(offsets), max(offsets) + 1))
    assert len(sim.acked) >= len(sim.deliveries) - 2 * 2 * sim.per_step


def _one_member_joined() -> tuple[Sim, ShareMemberClient]:
    """A member that has fetched: its join asks for the share-partitions' initialisation, and
    the target covering them comes with a heartbeat after the assignment interval (1 s)."""
    sim = Sim()
    a = sim.add("a")
    for _ in range(30):
        sim.step()
    assert sim.deliveries
    return sim, a


def test_a_member_that_leaves_closes_its_session_and_its_acknowledgements_apply():
    sim, a = _one_member_joined()
    a.leave(sim.now_ms / 1000)
    for _ in range(5):
        sim.step()
    assert a.done and [e["event"] for e in a.timeline][-1] == "left"
    described = sim.shard.handle(m.ShareGroupDescribeRequest(group_ids=["g"])).response
    assert described.groups[0].members == []
    delivered = {rec for _, rec, _ in sim.deliveries}
    assert delivered and delivered <= sim.acked


def _members_of(sim: Sim) -> list:
    return sim.shard.handle(m.ShareGroupDescribeRequest(group_ids=["g"])).response.groups[0].members


def test_a_heartbeat_answered_after_leave_was_called_is_not_taken_for_the_leave():
    sim, a = _one_member_joined()
    now_s = sim.now_ms / 1000 + a.interval_s
    beat = a.poll_heartbeat(now_s)
    assert beat is not None and beat.member_epoch > 0
    a.leave(now_s)  # the driver exits while that heartbeat is in flight
    a.on_heartbeat(now_s, sim.shard.handle(beat).response)
    assert not a.done and len(_members_of(sim)) == 1
    for _ in range(5):
        sim.step()
    assert a.done and _members_of(sim) == []


def test_a_leave_that_got_no_reply_is_sent_again():
    sim, a = _one_member_joined()
    a.leave(sim.now_ms / 1000)
    sim.step()  # the session closes
    now_s = sim.now_ms / 1000
    lost = a.poll_heartbeat(now_s)
    assert lost is not None and lost.member_epoch == -1
    a.on_heartbeat_failure(now_s)
    assert not a.done
    again = a.poll_heartbeat(now_s + 1)
    assert again == lost
    a.on_heartbeat(now_s + 1, sim.shard.handle(again).response)
    assert a.done and _members_of(sim) == []


@settings(max_examples=20)
@given(plan=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                               st.sampled_from(["join", "leave", "step", "noack"])),
                     min_size=1, max_size=40))
def test_share_members_coming_and_going_never_break_the_share_invariants(plan):
    sim = Sim(per_step=3)
    for name, op in plan:
        c = sim.members.get(name)
        if op == "join" and (c is None or c.done):
            sim.add(name)
        elif op == "leave" and c is not None:
            c.leave(sim.now_ms / 1000)
        else:
            sim.step(ack=op != "noack")
    for _ in range(5):
        sim.step()


def test_with_per_partition_bounds_only_partitions_the_upstream_answered_for_are_fetched():
    shard = GroupCoordinatorShard(config=CONFIG, metadata=image(foo=2), now_ms=0)
    shard.set_group_config("g", GroupConfig(share_auto_offset_reset="earliest"))
    c = ShareMemberClient("g", "m", ["foo"])
    c.on_heartbeat(0.0, shard.handle(c.poll_heartbeat(0.0)).response)
    assert c.assignment == []  # its share-partitions are initialised first
    shard.tick(500)  # within the session (1 s), after the heartbeat interval (100 ms)
    c.on_heartbeat(0.5, shard.handle(c.poll_heartbeat(0.5)).response)
    (first, second) = c.assignment
    fetch = c.poll_fetch(0.6, bounds={first: (40, 45)})
    (topic,) = fetch.topics
    assert [(p.partition, p.log_start_offset, p.log_end_offset) for p in topic.partitions] == [
        (first[1], 40, 45)]
    (acquired,) = c.on_fetch(0.6, shard.handle(fetch).response)
    assert (acquired.first_offset, acquired.last_offset) == (40, 44)  # from the log's start
    c.acknowledge(acquired)
    fetch = c.poll_fetch(0.7, bounds={second: (0, 0)})  # first's upstream is away now
    by_partition = {p.partition: p for p in fetch.topics[0].partitions}
    assert not by_partition[first[1]].fetch and by_partition[first[1]].acknowledgements
    assert by_partition[second[1]].fetch
    assert c.poll_fetch(0.8, bounds={}) is None  # nothing to fetch, nothing to acknowledge
