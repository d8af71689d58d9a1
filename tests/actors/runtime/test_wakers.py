"""Wake-ups: which client actors a turn's records wake, and for which members."""

from actors.runtime.wakers import Wakers
from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
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


def target(member_id: str, group: str = "g") -> Record:
    return Record(ConsumerGroupTargetAssignmentMemberKey(group, member_id),
                  ConsumerGroupTargetAssignmentMemberValue({"t": (0,)}))


def test_only_members_whose_target_changed_and_who_were_not_asking_are_woken():
    one, two = FakeClient(), FakeClient()
    wakers = Wakers()
    wakers.note(one, [heartbeat("a"), heartbeat("b")])
    wakers.note(two, [heartbeat("c")])
    epoch = Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3))
    woken = wakers.wake([epoch, target("a"), target("b"), target("c")], [heartbeat("b")])
    assert woken == 2
    assert one.woken == [["a"]]  # b's own reply carries its new target
    assert two.woken == [["c"]]


def test_a_turn_without_target_changes_wakes_nobody():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, [heartbeat("a")])
    epoch = Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3))
    assert wakers.wake([epoch], []) == 0
    assert client.woken == []


def test_a_member_of_another_group_or_unknown_is_not_woken_and_a_removed_one_is_forgotten():
    client = FakeClient()
    wakers = Wakers()
    wakers.note(client, [heartbeat("a"), heartbeat("x", group="other")])
    assert wakers.wake([target("x"), target("zz")], []) == 0  # x is known only in "other"
    removed = Record(ConsumerGroupMemberMetadataKey("g", "a"), None)
    wakers.wake([removed], [])
    assert len(wakers) == 1
    assert wakers.wake([target("a")], []) == 0


def test_a_dead_client_does_not_fail_the_turn():
    client = FakeClient()
    client.broken = True
    wakers = Wakers()
    wakers.note(client, [heartbeat("a")])
    assert wakers.wake([target("a")], []) == 1  # counted as sent; the error is swallowed
