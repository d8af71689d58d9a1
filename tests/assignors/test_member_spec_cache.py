"""A member spec's bulk forms of its assignment: what they hold, and that they are made once."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from assignors import MemberSpec

assignments = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.one_of(st.frozensets(st.integers(-2, 40), max_size=8),
              st.sets(st.integers(0, 40), max_size=8)),
    max_size=4,
)


@given(assignments)
def test_flat_assignment_lays_out_the_mapping_in_its_own_order(assigned):
    flat = MemberSpec(frozenset(), assigned).flat_assignment
    assert flat.topic_ids == tuple(assigned)
    lengths = np.frombuffer(flat.lengths, dtype=np.int64)
    partitions = np.frombuffer(flat.partitions, dtype=np.int64).tolist()
    assert lengths.tolist() == [len(ps) for ps in assigned.values()]
    assert partitions == [p for ps in assigned.values() for p in ps]
    assert flat.all_frozensets == all(type(ps) is frozenset for ps in assigned.values())


def test_bulk_forms_are_made_once_per_spec():
    spec = MemberSpec(frozenset({"a"}), {"a": frozenset({1, 2})})
    assert spec.flat_assignment is spec.flat_assignment
    assert spec.shared_assignment is spec.shared_assignment


def test_shared_assignment_is_the_one_value_all_topics_hold_as_the_same_object():
    numbers = frozenset({0, 3})
    assert MemberSpec(frozenset(), {"a": numbers, "b": numbers}).shared_assignment == (
        numbers, frozenset({"a", "b"}))
    # Equal but distinct objects, different values, or nothing held: no shared value.
    assert MemberSpec(frozenset(), {"a": numbers, "b": frozenset({0, 3})}).shared_assignment \
        is None
    assert MemberSpec(frozenset(), {"a": numbers, "b": frozenset({1})}).shared_assignment is None
    assert MemberSpec(frozenset()).shared_assignment is None
