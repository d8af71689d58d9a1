"""The pure streams member client (``protocol/client/streams_member.py``) against the real
shard, in simulated time: members join with a stateful two-subtopology topology, create the
internal topics the replies ask for, lose replies, are killed and replaced; no task is ever
active on two members at once, and once the chaos stops the group settles with every task
active exactly once and standbys off their active's process (invariant 8)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.tools.invariants_streams import check_streams
from protocol.client.streams_member import StreamsMemberClient, word_count_topology
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm

GID, SOURCE, PARTITIONS = "app", "words", 3
CONFIG = CoordinatorConfig(group_streams_min_session_timeout_ms=1_000,
                           group_streams_min_heartbeat_interval_ms=100)
SESSION_MS = 1_000
# A reply lost while it carried a revocation leaves the member holding the revoked tasks (the
# coordinator sends tasks only when they change, as Kafka's does) until its rebalance timeout
# fences it: short here, so that ``settle`` outlasts it.
REBALANCE_MS = 3_000
STEP_MS = 50
TASKS = {(s, p) for s in ("0", "1") for p in range(PARTITIONS)}


class Sim:
    """A shard and streams members; ``step`` moves time and lets every live member talk."""

    def __init__(self) -> None:
        self.topics = {SOURCE: PARTITIONS}
        self.shard = GroupCoordinatorShard(config=CONFIG, metadata=self._image(), now_ms=0)
        self.shard.set_group_config(GID, GroupConfig(
            streams_session_timeout_ms=SESSION_MS, streams_heartbeat_interval_ms=100,
            streams_num_standby_replicas=1, streams_initial_rebalance_delay_ms=0))
        self.now_ms = 0
        self.members: dict[str, StreamsMemberClient] = {}
        self.dead: dict[str, float] = {}
        self.count = 0

    def _image(self) -> MetadataImage:
        return MetadataImage([TopicMetadata(f"{n}-id", n, p) for n, p in self.topics.items()])

    def add(self) -> StreamsMemberClient:
        name = f"m{self.count}"
        self.count += 1
        c = StreamsMemberClient(GID, name, word_count_topology(GID, SOURCE),
                                f"p{self.count % 2}", session_timeout_ms=SESSION_MS)
        c.rebalance_timeout_ms = REBALANCE_MS
        self.members[name] = c
        return c

    def live(self) -> list[StreamsMemberClient]:
        return [c for n, c in self.members.items() if n not in self.dead and not c.done]

    def kill(self, pick: int) -> None:
        live = self.live()
        if len(live) > 1:
            self.dead[live[pick % len(live)].member_id] = self.now_ms / 1000

    def step(self, drop: frozenset[int] = frozenset()) -> None:
        self.now_ms += STEP_MS
        self.shard.tick(self.now_ms)
        now_s = self.now_ms / 1000
        for i, c in enumerate(self.live()):
            req = c.poll(now_s)
            if req is None:
                continue
            resp = self.shard.handle(req).response
            if i in drop:
                c.on_failure(now_s)  # the coordinator applied it; the reply was lost
                continue
            for name, topic in c.on_response(now_s, resp).items():
                self.topics.setdefault(name, topic.num_partitions)
                self.shard.update_metadata(self._image())
        self.check_exclusive()

    def check_exclusive(self) -> None:
        held: dict = {}
        for c in self.live():
            for task in c.owned.active:
                assert task not in held, f"{task} active on {held[task]} and {c.member_id}"
                held[task] = c.member_id

    def events(self) -> list[dict]:
        return [e for c in self.members.values() for e in c.timeline]


def settle(sim: Sim, steps: int = 200) -> None:
    for _ in range(steps):
        sim.step()
        owners = [t for c in sim.live() for t in c.owned.active]
        if sorted(owners) == sorted(TASKS) and sim.shard.groups[GID].state == "stable":
            return


def test_members_settle_with_every_task_active_once_and_standbys_on_the_other_process():
    sim = Sim()
    for _ in range(3):
        sim.add()
    settle(sim)
    assert sim.topics == {SOURCE: 3, f"{GID}-words-repartition": 3,
                          f"{GID}-counts-changelog": 3}
    live = sim.live()
    assert sorted(t for c in live for t in c.owned.active) == sorted(TASKS)
    assert {t for c in live for t in c.owned.standby} == {("1", p) for p in range(3)}
    assert check_streams(sim.events(), sim.dead, [c.member_id for c in live], TASKS) == []


def test_a_member_whose_replies_are_lost_gives_its_tasks_up_at_its_session_deadline():
    sim = Sim()
    first, second = sim.add(), sim.add()
    settle(sim)
    assert first.owned.active and second.owned.active
    for _ in range(SESSION_MS // STEP_MS + 10):
        sim.step(drop=frozenset({0}))  # every reply to the first member is lost
    lost = [e for e in first.timeline if e["why"].startswith("session deadline")]
    assert lost and lost[0]["active"] == []
    settle(sim)
    assert check_streams(sim.events(), sim.dead, [c.member_id for c in sim.live()],
                         TASKS) == []


def test_a_fenced_member_rejoins_at_epoch_zero_with_nothing():
    sim = Sim()
    c = sim.add()
    settle(sim)
    c.epoch += 5  # a heartbeat from an epoch the coordinator never gave
    for _ in range(3):
        sim.step()
    fenced = [e for e in c.timeline if e["why"].startswith("fenced")]
    assert fenced and fenced[0]["epoch"] == 0 and fenced[0]["active"] == []
    settle(sim)
    assert c.epoch > 0 and c.owned.active == frozenset(TASKS)


def test_a_leaving_member_gives_its_tasks_up_before_its_leave_is_sent():
    sim = Sim()
    a, b = sim.add(), sim.add()
    settle(sim)
    a.leave(sim.now_ms / 1000)
    assert a.owned.active == frozenset() and a.state == "leaving"
    settle(sim)
    assert a.done and a.error is None and b.owned.active == frozenset(TASKS)
    assert a.member_id not in sim.shard.groups[GID].members


def test_a_heartbeat_answered_after_leave_was_called_is_not_taken_for_the_leave():
    sim = Sim()
    a, _ = sim.add(), sim.add()
    settle(sim)
    now_s = a.next_due()
    beat = a.poll(now_s)
    assert beat is not None and beat.member_epoch > 0
    a.leave(now_s)  # the driver exits while that heartbeat is in flight
    a.on_response(now_s, sim.shard.handle(beat).response)
    assert not a.done and a.member_id in sim.shard.groups[GID].members
    settle(sim)
    assert a.done and a.member_id not in sim.shard.groups[GID].members


def test_an_invalid_topology_fails_the_member_for_good():
    sim = Sim()
    c = StreamsMemberClient(GID, "bad", sm.StreamsTopology(1, ()), "p", session_timeout_ms=0
                            + SESSION_MS)
    c.topology = sm.StreamsTopology(1, (sm.Subtopology(
        "0", (SOURCE,), state_changelog_topics=(sm.TopicInfo("x", partitions=2),)),))
    sim.members["bad"] = c
    sim.step()
    assert c.error == Errors.STREAMS_INVALID_TOPOLOGY and c.done


@settings(max_examples=30)
@given(st.lists(st.tuples(st.sampled_from(["step", "drop", "kill", "add"]),
                          st.integers(0, 7)), max_size=60))
def test_under_lost_replies_kills_and_joins_no_task_is_ever_active_twice(actions):
    sim = Sim()
    for _ in range(3):
        sim.add()
    settle(sim, 40)
    for kind, pick in actions:
        if kind == "kill":
            sim.kill(pick)
        elif kind == "add" and len(sim.live()) < 5:
            sim.add()
        sim.step(drop=frozenset({pick}) if kind == "drop" else frozenset())
    settle(sim, 400)
    live = [c.member_id for c in sim.live()]
    assert check_streams(sim.events(), sim.dead, live, TASKS) == []


def test_a_join_answered_a_session_late_is_not_trusted():
    sim = Sim()
    c = sim.add()
    req = c.poll(0.0)
    resp = sim.shard.handle(req).response
    late = SESSION_MS / 1000 + 0.5
    c.on_response(late, resp)  # the coordinator may have fenced it meanwhile
    assert c.epoch == 0 and c.owned.active == frozenset()
    assert c.timeline[-1]["why"] == "reply read after the session deadline"
    assert c.poll(late).topology is not None  # it joins again
