"""Java's orders as ``assignors.java_order`` models them, against what OpenJDK 17 printed for
the same calls (``HashMap.keySet()`` after ``put`` or ``computeIfAbsent``, a
``PriorityQueue``'s polls), and the properties any priority queue has."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assignors.java_order import JavaPriorityQueue, hash_map_order, java_string_hash

KEYS = ["process-a", "process-b", "process-c", "process-d", "p1", "p2", "p3", "p10", "p11",
        "node-7", "x"]


def test_string_hash_is_javas():
    assert [java_string_hash(k) for k in KEYS] == [
        -1094761341, -1094761340, -1094761339, -1094761338, 3521, 3522, 3523, 109199, 109200,
        -1040172244, 120]


def test_a_hash_map_filled_by_put_iterates_as_javas():
    assert hash_map_order(KEYS) == ["p1", "p11", "p2", "p3", "x", "process-d", "process-c",
                                    "process-b", "process-a", "node-7", "p10"]


def test_compute_if_absent_puts_a_key_first_in_its_bucket_and_grows_the_table_later():
    # Kafka's sticky assignor fills its processes' map so (processIdToState); two processes in
    # one bucket come out in the reverse of the order they were added.
    assert hash_map_order(KEYS, 3, compute_if_absent=True) == [
        "p11", "p1", "p2", "p3", "x", "process-d", "process-c", "process-b", "node-7",
        "process-a", "p10"]
    calls = ["p138908", "p138908", "p746277", "p746277"]
    assert hash_map_order(calls, 4, compute_if_absent=True) == ["p746277", "p138908"]
    assert hash_map_order(calls, 4) == ["p138908", "p746277"]


def test_a_priority_queue_polls_ties_as_javas():
    queue = JavaPriorityQueue(lambda e: e[0])
    for key, ident in [(1, 0), (0, 1), (0, 2), (1, 3), (0, 4), (2, 5), (0, 6)]:
        queue.add([key, ident])
    polled = []
    for _ in range(3):
        entry = queue.poll()
        polled.append(entry[1])
        entry[0] += 1
        queue.add(entry)
    while len(queue):
        polled.append(queue.poll()[1])
    assert polled == [1, 6, 4, 2, 4, 1, 0, 3, 6, 5]


@given(st.lists(st.integers(0, 5)))
def test_a_priority_queue_polls_every_item_smallest_first(keys):
    queue = JavaPriorityQueue(lambda e: e[0], [(k, i) for i, k in enumerate(keys)])
    out = [queue.poll() for _ in keys]
    assert queue.poll() is None
    assert sorted(i for _, i in out) == list(range(len(keys)))
    assert [k for k, _ in out] == sorted(keys)


@given(st.lists(st.text(min_size=1, max_size=8)), st.none() | st.integers(0, 40), st.booleans())
def test_a_hash_map_iterates_each_key_once(keys, capacity, compute):
    assert sorted(hash_map_order(keys, capacity, compute)) == sorted(set(keys))
