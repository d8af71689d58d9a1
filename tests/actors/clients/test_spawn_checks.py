"""Spawning refuses, at the call and before any actor exists, what the actor would die of."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.clients import spawner
from actors.clients.spawn_checks import check_assignor_versions
from actors.clients.spawner import ClientSpawner
from assignors.connect.assignor import IncrementalCooperativeAssignor
from assignors.connect.metadata import MAX_VERSION, MIN_VERSION


class NoCluster(ClientSpawner):
    """A spawner with no Ray and no controller: any use of them fails the test loudly."""

    def __getattr__(self, name):
        raise AssertionError(f"the spawner reached for {name} before refusing")


@pytest.mark.parametrize("versions", [(0, 2), (1, 3), (2, 1), (3, 3), (1,), "12", (1.0, 2)])
def test_spawn_worker_refuses_assignor_versions_the_assignor_does_not_implement(versions):
    with pytest.raises(ValueError, match="assignor_versions"):
        NoCluster().spawn_worker("g", assignor_versions=versions)


@given(st.integers(-2, 5), st.integers(-2, 5))
def test_assignor_versions_are_accepted_exactly_when_the_assignor_accepts_them(lo, hi):
    try:
        IncrementalCooperativeAssignor(0, minimum_version=lo, maximum_version=hi)
        builds = True
    except ValueError:
        builds = False
    if builds:
        assert check_assignor_versions((lo, hi)) == (lo, hi)
        assert MIN_VERSION <= lo <= hi <= MAX_VERSION
    else:
        with pytest.raises(ValueError, match="outside what the Connect assignor implements"):
            check_assignor_versions((lo, hi))


@pytest.mark.parametrize(("protocol", "options", "message"), [
    ("kip848", {}, "unknown protocol"),
    ("classic", {"connect_protocol": "sticky"}, "connect_protocol"),
    ("connect", {"connect_protocol": "eager"}, "classic Connect setting"),
    ("connect", {"scheduled_rebalance_max_delay_ms": -1}, "must not be negative"),
])
def test_spawn_worker_refuses_options_a_worker_cannot_run_with(protocol, options, message):
    with pytest.raises(ValueError, match=message):
        NoCluster().spawn_worker("g", protocol=protocol, **options)


@pytest.mark.parametrize(("n", "topics", "protocol", "options", "message"), [
    (1, ["t"], "kip848", {}, "unknown protocol"),
    (0, ["t"], "consumer", {}, "n must be in"),
    (1, None, "consumer", {}, "exactly one"),
    (1, ["t"], "consumer", {"topic_regex": "t.*"}, "exactly one"),
    (1, ["t"], "consumer", {"client_assignors": ["uniform"]}, "unknown client assignors"),
    (1, ["t"], "consumer", {"client_assignors": ["sticky"], "server_assignor": "range"},
     "cannot be used together"),
    (1, ["t"], "consumer", {"revocation_cost_ms": -5}, "must not be negative"),
    (2, ["t"], "classic", {}, "exactly one member"),
    (1, None, "classic", {}, "list of topic names"),
    (1, ["t"], "classic", {"assignors": ["roundrobin", "nope"]}, "name at least one"),
    (1, ["t"], "classic", {"assignors": []}, "name at least one"),
    (1, ["t"], "classic", {"assignors": ["range", "range"]}, "each once"),
])
def test_spawn_consumers_refuses_what_the_consumer_actor_would_die_of(
        n, topics, protocol, options, message):
    with pytest.raises(ValueError, match=message):
        NoCluster().spawn_consumers("g", n, topics, protocol, **options)


class NoUpstream(ClientSpawner):
    """A spawner whose controller fronts no upstream (and which has nothing else)."""

    class _controller:  # stands in for the controller's actor handle
        class upstream_settings:
            @staticmethod
            def remote():
                return None


@pytest.mark.parametrize(("options", "message"), [
    ({"process": "print"}, "must be a function"),
    ({"process": print, "protocol": "classic", "assignors": ("range",)}, "KIP-848"),
    ({"process": print, "stream": False}, "KIP-848"),
    ({"process": print}, "has no upstream"),
])
def test_a_function_for_real_records_is_refused_where_it_could_never_run(
        monkeypatch, options, message):
    monkeypatch.setattr(spawner, "_get", lambda ref: ref)
    with pytest.raises(ValueError, match=message):
        NoUpstream().spawn_consumer("g", topics=["t"], **options)


def test_a_share_consumers_function_without_an_upstream_is_refused_at_the_call(monkeypatch):
    monkeypatch.setattr(spawner, "_get", lambda ref: ref)
    with pytest.raises(ValueError, match="has no upstream"):
        NoUpstream().spawn_share_consumer("g", topics=["t"], process=print)
