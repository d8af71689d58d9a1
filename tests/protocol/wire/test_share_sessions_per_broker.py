"""A client keeps one share session with each share-partition leader it fetches from. In front
of a multi-broker upstream the gateway plays every broker (a listener each), so a member's
sessions are kept per broker: opening one at a second broker must not reset the first."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as E

from protocol.wire.share_session import ShareSessions

A, B = ("t", 0), ("t", 1)


def test_a_members_sessions_at_two_brokers_move_on_independently():
    s = ShareSessions()
    assert s.fetch("g", "m", 0, [A], [], False, node=1).partitions == (A,)
    assert s.fetch("g", "m", 0, [B], [], False, node=2).partitions == (B,)
    # Broker 1's session survived broker 2's opening: its next epoch still holds.
    assert s.fetch("g", "m", 1, [], [], False, node=1).partitions == (A,)
    assert s.fetch("g", "m", 1, [], [], False, node=2).partitions == (B,)
    assert s.fetch("g", "m", 1, [], [], False, node=1).error_code == (
        E.invalid_share_session_epoch.value)


def test_closing_the_session_at_one_broker_names_what_it_held_and_keeps_the_other():
    s = ShareSessions()
    s.fetch("g", "m", 0, [A], [], False, node=1)
    s.fetch("g", "m", 0, [B], [], False, node=2)
    step = s.acknowledge("g", "m", -1, node=1)
    assert step.close and step.partitions == (A,)
    assert s.get("g", "m", node=1) is None and s.get("g", "m", node=2) is not None


def test_a_member_leaving_drops_its_sessions_at_every_broker():
    s = ShareSessions()
    for node in (None, 1, 2):
        s.fetch("g", "m", 0, [A], [], False, node=node)
    s.fetch("g", "other", 0, [A], [], False, node=1)
    s.drop("g", "m")
    assert len(s) == 1 and s.get("g", "other", node=1) is not None
    assert s.fetch("g", "m", 1, [], [], False, node=2).error_code == (
        E.share_session_not_found.value)
