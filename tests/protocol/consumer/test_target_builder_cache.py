"""The target builder caches its assignor specs on the group; whatever the group went
through, a computation with that cache gives what one from scratch gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.consumer.target_assignment import assignment_spec, compute_target
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member

TOPICS = ["foo", "bar", "baz"]
OPS = st.lists(
    st.tuples(
        st.sampled_from(["join", "heartbeat", "leave", "resubscribe", "grow"]),
        st.integers(0, 5),
        st.sets(st.sampled_from(TOPICS), min_size=1),
    ),
    min_size=1,
    max_size=25,
)


def image_of(sizes: dict[str, int]) -> MetadataImage:
    return MetadataImage([TopicMetadata(f"{n}-id", n, k) for n, k in sizes.items()])


@settings(max_examples=80, deadline=None)
@given(OPS, st.sampled_from(["uniform", "range"]))
def test_a_cached_computation_equals_one_from_scratch(ops, assignor):
    sizes = {"foo": 4, "bar": 3, "baz": 2}
    shard = GroupCoordinatorShard(metadata=image_of(sizes))
    members: dict[int, Member] = {}
    for op, who, topics in ops:
        if op == "join" and who not in members:
            members[who] = Member(shard, f"m{who}", topics=sorted(topics))
            members[who].join(server_assignor=assignor)
        elif op == "heartbeat" and who in members:
            members[who].heartbeat()
        elif op == "leave" and who in members:
            members.pop(who).leave()
        elif op == "resubscribe" and who in members:
            members[who].topics = sorted(topics)
            members[who].heartbeat(subscribed_topic_names=sorted(topics))
        elif op == "grow":
            for name in topics:
                sizes[name] += 1
            shard.update_metadata(image_of(sizes))
        group = shard.groups.get("g")
        if group is None or not group.members:
            continue
        warm = compute_target(group, shard.image, assignor)
        warm_spec = assignment_spec(group, shard.image)
        group.builder_cache.clear()
        assert compute_target(group, shard.image, assignor) == warm
        assert assignment_spec(group, shard.image) == warm_spec
