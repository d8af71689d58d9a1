"""KIP-1263's assignment interval for consumer groups, with a nonzero interval on both systems.

The session runs both at interval 0 (tests/conformance/conftest.py); each conversation here sets
the group config ``consumer.assignment.interval.ms`` before its group exists and polls
DescribeConfigs until the broker shows it (Kafka applies a group config through its metadata
log, a moment after IncrementalAlterConfigs answers). The interval is long enough that the
steps right after a join fall within it on a busy machine, short enough to wait out before the
members that do not heartbeat meanwhile time out. Kafka 4.4's rule
(``canComputeNextTargetAssignment``): the first target is computed at once, a bump within the
interval leaves the target for the first heartbeat after it, and a group left empty gets an
empty target with no time, so the next join is assigned. Which of three members gets which
partition follows the member ids' order, each broker its own (v1 ids are random): those replies
are compared without the assignment, and the describe by sizes and what is held together.
"""

from __future__ import annotations

from tests.conformance.cases_consumer_membership import _counts, _no_assignment
from tests.conformance.requests import (
    ack,
    alter_configs,
    assigned,
    cg_describe,
    describe_configs,
    join,
    leave,
)
from tests.conformance.script import Poll, Script, script

# Below the session's session timeout (4 s), so the members not heartbeating while one polls
# out the interval are still there when it ends.
INTERVAL_MS = 2_500
KEY = "consumer.assignment.interval.ms"


def with_interval(value: int = INTERVAL_MS) -> Poll:
    """The group's assignment interval set (before the group exists), then asked for until
    the broker shows it."""
    def shown(reply: dict) -> bool:
        return any(c.get("name") == KEY and c.get("value") == str(value)
                   for r in reply.get("results") or [] for c in r.get("configs") or [])

    return Poll((alter_configs(changes={KEY: str(value)}), describe_configs(names=[KEY])),
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


CASES: list[Script] = [case for v in (1,) for case in _scripts(v)]
