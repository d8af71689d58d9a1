"""KIP-1263's assignment interval for consumer and streams groups, with a nonzero interval on
both systems.

The session runs both at interval 0 (tests/conformance/conftest.py); each conversation here sets
the group config ``consumer.assignment.interval.ms`` before its group exists and polls
DescribeConfigs until the broker shows it (Kafka applies a group config through its metadata
log, a moment after IncrementalAlterConfigs answers). The interval is long enough that the steps
right after a join fall within it on a busy machine; the group's session timeout is raised with
it, so the members that do not heartbeat while another polls it out do not time out. Kafka 4.4's
rule (``canComputeNextTargetAssignment``): the first target is computed at once, a bump within
the interval leaves the target for the first heartbeat after it, and a group left empty gets an
empty target with no time, so the next join is assigned. Which of three members gets which
partition follows the member ids' order, each broker its own (v1 ids are random): those replies
are compared without the assignment, and the describe by sizes and what is held together.

Streams groups (``streams.assignment.interval.ms``, the initial rebalance delay off): a member
whose target the interval holds back is told ASSIGNMENT_DELAYED "Assignment delayed due to the
configured assignment interval." and reconciles toward the current target meanwhile.
"""

from __future__ import annotations

from tests.conformance.cases_consumer_membership import _counts, _no_assignment
from tests.conformance.cases_streams import DELAY_CONFIG, _described, over
from tests.conformance.requests import (
    ack,
    alter_configs,
    assigned,
    cg_describe,
    describe_configs,
    join,
    leave,
    streams_describe,
    streams_heartbeat,
    streams_join,
)
from tests.conformance.script import Poll, Script, script

INTERVAL_MS = 2_500
KEY = "consumer.assignment.interval.ms"
# The group's session timeout while one member polls out the interval and the others wait
# their turn: the session's 4 s left a busy Kafka timing out a waiting member (ci63:
# UNKNOWN_MEMBER_ID on Kafka's side only), which is not what these cases compare.
SESSION_KEY = "consumer.session.timeout.ms"
SESSION_MS = 20_000
STREAMS_KEY = "streams.assignment.interval.ms"


def _streams_counts(reply: dict) -> dict:
    """A streams describe (``_described``) with each member's task counts as a multiset (which
    member gets which task follows the random member ids' order) and the active tasks the
    targets hold together."""
    group = dict(_described(reply)["groups"][0])

    def tasks(member: dict, which: str, kind: str) -> list:
        return [(t["subtopology_id"], p) for t in (member.get(which) or {}).get(kind) or []
                for p in t["partitions"]]

    members = group["members"]
    group["targets_active"] = sorted(t for x in members
                                     for t in tasks(x, "target_assignment", "active_tasks"))
    group["members"] = sorted(
        (x["member_epoch"], *(len(tasks(x, which, kind))
                              for which in ("assignment", "target_assignment")
                              for kind in ("active_tasks", "standby_tasks", "warmup_tasks")))
        for x in members)
    return group


def with_interval(value: int = INTERVAL_MS) -> Poll:
    """The group's assignment interval (and a session long enough to wait it out) set before
    the group exists, then asked for until the broker shows them."""
    return _configs({KEY: str(value), SESSION_KEY: str(SESSION_MS)})


def streams_interval() -> Poll:
    """A streams group's assignment interval at ``INTERVAL_MS`` and its initial rebalance
    delay off, so the first join is assigned at once and the next ones meet the interval."""
    return _configs({STREAMS_KEY: str(INTERVAL_MS), DELAY_CONFIG: "0"})


def _configs(changes: dict[str, str]) -> Poll:
    def shown(reply: dict) -> bool:
        got = {c.get("name"): c.get("value")
               for r in reply.get("results") or [] for c in r.get("configs") or []}
        return all(got.get(k) == v for k, v in changes.items())

    return Poll((alter_configs(changes=changes), describe_configs(names=sorted(changes))),
                until=shown)


def changed(reply: dict) -> bool:
    """``until``: the reply carries an assignment (it moved: the target was computed)."""
    return reply.get("assignment") is not None


def _scripts(v: int) -> list[Script]:
    def j(alias, **kw):
        return join(alias, version=v, **kw)

    def a(alias, **kw):
        return ack(alias, version=v, **kw)

    return [
        script(f"v{v} a join inside the assignment interval joins at the target's epoch "
               "with nothing, and the group stays assigning",
               with_interval(), j("a"), j("b"), a("a"), a("b"), cg_describe()),
        script(f"v{v} the first heartbeat after the assignment interval computes the target "
               "once for the joins within it",
               with_interval(), j("a"), j("b"), j("c"),
               a("a", until=changed, view=_no_assignment), a("a", view=_no_assignment),
               a("b", until=assigned, view=_no_assignment),
               a("c", until=assigned, view=_no_assignment), cg_describe(view=_counts)),
        script(f"v{v} the last member leaving inside the assignment interval lets the next "
               "join be assigned at once",
               with_interval(), j("a"), leave("a", version=v), j("b"), cg_describe()),
        script(f"v{v} describe configs shows the group's assignment interval",
               with_interval(), describe_configs(names=[KEY])),
    ]


def _streams() -> list[Script]:
    return [
        script("a streams join inside the assignment interval waits at the target's epoch "
               "with nothing, told assignment delayed, and so is the member already there",
               streams_interval(), streams_join("a"), streams_join("b"), streams_heartbeat("a"),
               streams_describe(version=1, view=_described)),
        script("the first streams heartbeat after the assignment interval computes the target "
               "once for the joins within it",
               streams_interval(), streams_join("a"), streams_join("b"), streams_join("c"),
               streams_heartbeat("a", until=over),
               streams_describe(version=1, view=_streams_counts)),
        script("the last streams member leaving inside the assignment interval lets the next "
               "join be assigned at once",
               streams_interval(), streams_join("a"), streams_heartbeat("a", member_epoch=-1),
               streams_join("b")),
        script("describe configs shows a streams group's assignment interval",
               streams_interval(), describe_configs(names=[STREAMS_KEY])),
    ]


CASES: list[Script] = [*(case for v in (1,) for case in _scripts(v)), *_streams()]
