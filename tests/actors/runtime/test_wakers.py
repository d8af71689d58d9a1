"""Wake-ups, the sending half: which client actors the shard's decision reaches, once each."""

from actors.runtime.wakers import Wakers
from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    Record,
)


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
    wakers.note(one, [heartbeat("a"), heartbeat("b")])
    wakers.note(two, [heartbeat("c")])
    woken = wakers.wake([("g", "a"), ("g", "b"), ("g", "c"), ("g", "zz")])
    assert woken == 3
    assert one.woken == [["a", "b"]]
    assert two.woken == [["c"]]


def test_nothing_to_wake_sends_nothing():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, [heartbeat("a")])
    assert wakers.wake([]) == 0
    assert client.woken == []


def test_a_member_of_another_group_is_not_woken_and_a_removed_one_is_forgotten():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, [heartbeat("a"), heartbeat("x", group="other")])
    assert wakers.wake([("g", "x")]) == 0  # x is known only in "other"
    epoch = Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3))
    wakers.forget([epoch, Record(ConsumerGroupMemberMetadataKey("g", "a"), None)])
    assert len(wakers) == 1
    assert wakers.wake([("g", "a")]) == 0
    assert client.woken == []


def test_a_dead_client_does_not_fail_the_turn():
    client = FakeClient()
    client.broken = True
    wakers = Wakers()
    wakers.note(client, [heartbeat("a")])
    assert wakers.wake([("g", "a")]) == 1  # counted as sent; the error is swallowed
