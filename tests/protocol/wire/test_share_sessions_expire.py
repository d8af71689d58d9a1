"""Share sessions live as long as their member: a member the group does not know keeps none,
and once every session is open, the one idle longest past the share session timeout makes
room, so abandoned sessions cannot lock new members out until the gateway restarts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as E

from protocol.wire.share_session import ShareSessions

A = ("t", 0)
TIMEOUT_MS = 45_000
LIMIT = 2_000


def _full(now_ms: int = 0) -> ShareSessions:
    s = ShareSessions(max_sessions=LIMIT, idle_timeout_ms=TIMEOUT_MS)
    for k in range(LIMIT):
        assert s.fetch("g", f"m{k}", 0, [A], [], False, now_ms).error_code == 0
    return s


def test_after_the_limit_a_session_idle_past_the_timeout_makes_room_for_a_new_one():
    s = _full()
    s.fetch("g", "m0", 1, [], [], False, TIMEOUT_MS - 1)  # m0 used since: m1 is the idlest
    step = s.fetch("g", "new", 0, [A], [], False, TIMEOUT_MS)
    assert step.error_code == 0 and len(s) == LIMIT
    assert s.get("g", "m1") is None and s.get("g", "m0") is not None
    # Every abandoned session can give way in turn, one per new session.
    for k in range(2, LIMIT):
        assert s.fetch("g", f"new{k}", 0, [A], [], False, TIMEOUT_MS).error_code == 0
    assert s.get("g", "m0") is not None and len(s) == LIMIT


def test_after_the_limit_sessions_in_use_are_kept_and_the_new_one_is_refused():
    s = _full(now_ms=1_000)
    step = s.fetch("g", "new", 0, [A], [], False, TIMEOUT_MS)
    assert step.error_code == E.share_session_limit_reached.value
    assert s.get("g", "new") is None and len(s) == LIMIT


def test_a_member_the_group_does_not_know_keeps_no_session():
    s = ShareSessions()
    s.fetch("g", "ghost", 0, [A], [], False, 0)
    s.answered("g", "ghost", E.unknown_member_id.value)
    s.fetch("nogroup", "m", 0, [A], [], False, 0)
    s.answered("nogroup", "m", E.group_id_not_found.value)
    s.fetch("g", "member", 0, [A], [], False, 0)
    s.answered("g", "member", E.none.value)
    assert len(s) == 1 and s.get("g", "member") is not None


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from(["open", "fetch", "ack"]), st.integers(0, 5),
                          st.integers(0, 3 * TIMEOUT_MS)), max_size=40))
def test_sessions_stay_within_the_limit_and_none_used_within_the_timeout_is_evicted(ops):
    s = ShareSessions(max_sessions=3, idle_timeout_ms=TIMEOUT_MS)
    now_ms, used = 0, {}
    for kind, k, step_ms in ops:
        now_ms += step_ms
        member = f"m{k}"
        before = dict(used)
        session = s.get("g", member)
        if kind == "open":
            step = s.fetch("g", member, 0, [A], [], False, now_ms)
        elif kind == "fetch" and session is not None:
            step = s.fetch("g", member, session.epoch, [A], [], False, now_ms)
        elif session is not None:
            step = s.acknowledge("g", member, session.epoch, now_ms)
        else:
            continue
        if step.error_code == 0:
            used[member] = now_ms
        assert len(s) <= 3
        for other, at in before.items():
            if s.get("g", other) is None and other != member:
                assert now_ms - at >= TIMEOUT_MS  # only an idle session gave way
                used.pop(other)
