"""Where the coordinator actors go over a cluster's nodes, and the storage they may not leave."""

import pickle

import pytest

from actors.runtime.placement_nodes import (
    StoragePlacementError,
    is_object_store,
    plan,
)
from protocol.errors import CoordinatorError, Errors

NODES = ["c" * 56, "a" * 56, "b" * 56]


def test_partitions_are_spread_round_robin_over_the_nodes_in_id_order():
    placement = plan("s3://bucket/cohort", shared_storage=False, nodes=NODES)
    assert [placement.node_for(p) for p in range(5)] == [
        "a" * 56, "b" * 56, "c" * 56, "a" * 56, "b" * 56]
    assert not placement.pinned


def test_spread_actors_may_move_to_another_node_when_theirs_dies():
    strategy = plan("/mnt/efs/cohort", True, NODES).options(1)["scheduling_strategy"]
    assert strategy.node_id == "b" * 56
    assert strategy.soft is True


def test_unshared_local_storage_on_several_nodes_is_refused_with_what_to_do():
    with pytest.raises(StoragePlacementError) as refused:
        plan("./cohort-data", shared_storage=False, nodes=NODES)
    assert refused.value.error == Errors.INVALID_CONFIG
    assert "3 alive nodes" in str(refused.value)
    assert "--shared-storage" in str(refused.value) and "s3://" in str(refused.value)
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, CoordinatorError)


def test_the_refusal_survives_a_trip_through_ray():
    error = pickle.loads(pickle.dumps(StoragePlacementError("no")))
    assert error.error == Errors.INVALID_CONFIG and error.message == "no"


def test_unshared_local_storage_on_one_node_pins_every_actor_to_it():
    placement = plan("./cohort-data", shared_storage=False, nodes=["a" * 56])
    strategy = placement.options(7)["scheduling_strategy"]
    assert placement.pinned and strategy.soft is False and strategy.node_id == "a" * 56


def test_a_cluster_without_alive_nodes_is_refused():
    with pytest.raises(StoragePlacementError):
        plan("s3://b/p", False, [])


@pytest.mark.parametrize("path, remote", [
    ("s3://bucket/prefix", True), ("memory://", True), ("gs://b", True),
    ("./cohort-data", False), ("/mnt/efs/cohort", False), ("s3:/typo", False),
])
def test_object_store_locations_are_told_from_local_paths(path, remote):
    assert is_object_store(path) is remote
