"""Packed calls: what Cohort's own callers pickle before Ray sees it comes back as it was, and
a partition resolves a client's waker token once, within a bound."""

from __future__ import annotations

from actors.runtime.packed import WakerTokens, pack, unpack, waker_token
from protocol import messages as m


class Handle:
    """Stands in for a client actor's handle: anything picklable resolves the same way."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_a_packed_request_list_comes_back_equal():
    requests = [
        m.ConsumerGroupHeartbeatRequest("g", "m1", 3,
                                        topic_partitions=[m.TopicPartitions("t", [0, 2])]),
        m.OffsetCommitRequest("g", topics=[m.OffsetCommitRequestTopic(
            "t", [m.OffsetCommitRequestPartition(0, 42, committed_metadata="é")])]),
    ]
    assert unpack(pack(requests)) == requests


def test_a_token_resolves_once_and_then_to_the_same_handle():
    tokens = WakerTokens()
    token = waker_token(Handle("a"))
    first = tokens.resolve(token)
    assert first.name == "a"
    assert tokens.resolve(bytes(token)) is first, "an equal token is the handle already made"
    assert tokens.resolve(None) is None
    assert len(tokens) == 1


def test_past_the_bound_the_tokens_are_resolved_afresh():
    tokens = WakerTokens(max_tokens=2)
    a, b, c = (waker_token(Handle(n)) for n in "abc")
    first_a = tokens.resolve(a)
    tokens.resolve(b)
    assert tokens.resolve(c).name == "c"
    assert len(tokens) == 1, "the full cache started over"
    again = tokens.resolve(a)
    assert again.name == "a" and again is not first_a


def test_what_pickle_refuses_is_packed_as_ray_would_have_sent_it():
    class Local(str):
        """A class pickle cannot name (defined in a function)."""

    packed = unpack(pack(m.OffsetFetchRequest(group_id=Local("g"))))
    assert packed.group_id == "g" and type(packed.group_id).__name__ == "Local"
