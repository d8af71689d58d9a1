"""Wake-ups, the sending half: which client actors the shard's decision reaches, once each."""

from actors.runtime.wakers import Wakers
from protocol import messages as m
from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.consumer.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
)
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard

members = GroupCoordinatorShard.wakeable_members
departed = GroupCoordinatorShard.departed_members


class FakeClient:
    """Stands in for a ConsumerClient handle: records its ``wake.remote`` calls."""

    def __init__(self) -> None:
        self.woken: list[list[str]] = []
        self.wake = self
        self.broken = False

    def remote(self, member_ids: list[str]) -> None:
        if self.broken:
            raise RuntimeError("actor gone")
        self.woken.append(member_ids)


def heartbeat(member_id: str, group: str = "g") -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=1)


def test_each_client_is_woken_once_for_its_named_members_and_unknown_ones_are_skipped():
    one, two = FakeClient(), FakeClient()
    wakers = Wakers()
    wakers.note(one, members([heartbeat("a"), heartbeat("b")]))
    wakers.note(two, members([heartbeat("c")]))
    woken = wakers.wake([("g", "a"), ("g", "b"), ("g", "c"), ("g", "zz")])
    assert woken == 3
    assert one.woken == [["a", "b"]]
    assert two.woken == [["c"]]


def test_nothing_to_wake_sends_nothing():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, members([heartbeat("a")]))
    assert wakers.wake([]) == 0
    assert client.woken == []


def test_a_member_of_another_group_is_not_woken_and_a_removed_one_is_forgotten():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, members([heartbeat("a"), heartbeat("x", group="other")]))
    assert wakers.wake([("g", "x")]) == 0  # x is known only in "other"
    epoch = Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3))
    wakers.forget(departed([epoch, Record(ConsumerGroupMemberMetadataKey("g", "a"), None)]))
    assert len(wakers) == 1
    assert wakers.wake([("g", "a")]) == 0
    assert client.woken == []


def test_a_dead_client_does_not_fail_the_turn():
    client = FakeClient()
    client.broken = True
    wakers = Wakers()
    wakers.note(client, members([heartbeat("a")]))
    assert wakers.wake([("g", "a")]) == 1  # counted as sent; the error is swallowed


def test_only_heartbeats_naming_a_member_are_noted():
    joining = ConsumerGroupHeartbeatRequest(group_id="g", member_id="", member_epoch=0)
    commit = m.OffsetCommitRequest(group_id="g", member_id="a")
    assert members([joining, commit, heartbeat("b")]) == [("g", "b")]


def test_the_map_is_bounded_and_forgets_the_member_heard_from_longest_ago():
    client = FakeClient()
    wakers = Wakers(max_members=2)
    wakers.note(client, members([heartbeat("a"), heartbeat("b")]))
    wakers.note(client, members([heartbeat("a")]))  # a heard from again: b is now the oldest
    wakers.note(client, members([heartbeat("refused-1"), heartbeat("refused-2")]))
    assert len(wakers) == 2
    assert wakers.wake([("g", "a"), ("g", "b")]) == 0
    wakers.note(client, members([heartbeat("a")]))
    assert len(wakers) == 2
    assert wakers.wake([("g", "a"), ("g", "refused-2")]) == 2
