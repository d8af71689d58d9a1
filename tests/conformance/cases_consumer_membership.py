"""KIP-848 membership: fencing and epochs, static members, reconciliation, describe shapes.

Conversations of two or three members whose steps are the seeds' case studies (seed 002:
joining, revocation before assignment, leaving) and the edge cases seed 000 names (a lost
response, a fenced member, static members coming back), each played at both versions.
"""

from __future__ import annotations

from tests.conformance.requests import (
    ack,
    assigned,
    cg_describe,
    cg_heartbeat,
    join,
    leave,
    owns,
)
from tests.conformance.script import BAR, BAZ, FOO, Epoch, Id, Owned, Script, script

VERSIONS = (0, 1)


def _no_assignment(reply: dict) -> dict:
    """A heartbeat reply without its assignment, where which member gets which partitions
    follows an order each broker has its own (random member or topic ids); the describe
    that follows compares the sizes (``_counts``)."""
    return {k: v for k, v in reply.items() if k != "assignment"}


def _counts(reply: dict) -> dict:
    """A describe with the members' assignment and target sizes (as a multiset: which member
    has which size follows the ids' order) and the partitions they hold together."""
    group = dict(reply["groups"][0])
    held = sorted((tp["topic_name"], p) for x in group["members"]
                  for tp in x["assignment"]["topic_partitions"] for p in tp["partitions"])
    group["members"] = sorted(
        tuple(sum(len(tp["partitions"]) for tp in x[k]["topic_partitions"])
              for k in ("assignment", "target_assignment"))
        for x in group["members"])
    group["held"] = held
    return group


def _fencing(v: int) -> list[Script]:
    def j(alias, **kw):
        return join(alias, version=v, **kw)

    def rj(alias, **kw):  # a rejoin at epoch 0 under the member's own id
        return join(alias, version=v, member_id=Id(alias), **kw)

    def hb(alias, **kw):
        return cg_heartbeat(alias, version=v, **kw)

    return [
        script(f"v{v} a heartbeat with an epoch above the member's is fenced",
               j("a"), hb("a", member_epoch=Epoch("a", 1)), hb("a"), cg_describe()),
        script(f"v{v} a heartbeat with an epoch two below the member's is fenced",
               j("a"), j("b"), ack("a", version=v), ack("a", version=v), j("c"),
               ack("a", version=v), ack("a", version=v),
               hb("a", member_epoch=Epoch("a", -2)), cg_describe()),
        script(f"v{v} a retry with the previous epoch owning a subset is accepted (lost reply)",
               j("a"), j("b"), ack("a", version=v), ack("a", version=v),
               hb("a", member_epoch=Epoch("a", -1), topic_partitions=owns({FOO: [0]})),
               cg_describe()),
        script(f"v{v} a retry with the previous epoch owning more than its assignment is fenced",
               j("a"), j("b"), ack("a", version=v), ack("a", version=v),
               hb("a", member_epoch=Epoch("a", -1), topic_partitions=owns({FOO: [0, 1, 2]})),
               cg_describe()),
        script(f"v{v} a retry with the previous epoch and no owned partitions is fenced",
               j("a"), j("b"), ack("a", version=v), ack("a", version=v),
               hb("a", member_epoch=Epoch("a", -1)), cg_describe()),
        script(f"v{v} a fenced member rejoins at epoch 0 under its own id",
               j("a"), hb("a", member_epoch=Epoch("a", 1)), rj("a"), cg_describe()),
        script(f"v{v} a live member rejoining at epoch 0 keeps its id and starts over",
               j("a"), j("b"), ack("a", version=v), ack("b", version=v), rj("a"),
               ack("a", version=v), ack("b", version=v), cg_describe()),
        script(f"v{v} a member revoking rejoins at epoch 0 mid-revocation",
               j("a"), j("b"), rj("a"), ack("b", version=v), ack("a", version=v), cg_describe()),
        script(f"v{v} a leave then a heartbeat at the old epoch is unknown",
               j("a"), j("b"), leave("a", version=v), hb("a"), ack("b", version=v),
               cg_describe()),
    ]


def _reconciliation(v: int) -> list[Script]:
    def j(alias, **kw):
        return join(alias, version=v, **kw)

    # v1 members bring ids that sort by alias on both systems, so the range assignor's
    # choices are compared exactly; v0's coordinator-made ids are random: there, sizes. The
    # uniform assignor over several topics orders them by topic id, each broker's own: sizes.
    count = {"view": _no_assignment} if v == 0 else {}
    counts = {"view": _counts} if v == 0 else {}

    def a(alias, **kw):
        return ack(alias, version=v, **kw)

    return [
        script(f"v{v} three members share a topic after revoking in turn (seed 002 basic)",
               j("a"), j("b"), a("a"), a("a"), a("b"), j("c"), a("b"), a("c"), a("a"),
               a("a"), a("c"), cg_describe()),
        script(f"v{v} a member leaving gives its partitions to the others",
               j("a"), j("b"), a("a"), a("a"), a("b"), leave("b", version=v), a("a"),
               cg_describe()),
        script(f"v{v} a subscription change moves the member to the new topic",
               j("a"), j("b"), a("a"), a("a"), a("b"),
               cg_heartbeat("b", version=v, subscribed_topic_names=[BAR]), a("a"), a("b"),
               cg_describe()),
        script(f"v{v} two topics spread over two members with the range assignor",
               j("a", subscribed_topic_names=[FOO, BAR], server_assignor="range"),
               j("b", subscribed_topic_names=[FOO, BAR], server_assignor="range", **count),
               a("a", **count), a("a", **count), a("b", **count), cg_describe(**counts)),
        script(f"v{v} three topics spread evenly over two members with the uniform assignor",
               j("a", subscribed_topic_names=[FOO, BAR, BAZ]),
               j("b", subscribed_topic_names=[FOO, BAR, BAZ], view=_no_assignment),
               a("a", view=_no_assignment), a("a", view=_no_assignment),
               a("b", view=_no_assignment), cg_describe(view=_counts)),
        script(f"v{v} members subscribed to different topics get only their own",
               j("a", subscribed_topic_names=[FOO]), j("b", subscribed_topic_names=[BAR]),
               a("a"), a("b"), cg_describe()),
        script(f"v{v} a member subscribed to a missing topic gets nothing",
               j("a", subscribed_topic_names=["cf-missing"]), a("a"), cg_describe()),
        script(f"v{v} the assignor a member names is the group's",
               j("a", server_assignor="range"), cg_describe()),
        script(f"v{v} a rack id change does not rebalance the group",
               j("a", rack_id="r1"), cg_heartbeat("a", version=v, rack_id="r2"), cg_describe()),
        script(f"v{v} a server assignor change does not rebalance the group",
               j("a"), cg_heartbeat("a", version=v, server_assignor="range"), cg_describe()),
        script(f"v{v} a heartbeat that restates everything gets the assignment again",
               j("a"), cg_heartbeat("a", version=v, rebalance_timeout=30_000,
                                    subscribed_topic_names=[FOO], topic_partitions=owns(
                                        {FOO: [0, 1, 2]})), cg_describe()),
        script(f"v{v} an empty group after the last member left describes as empty",
               j("a"), leave("a", version=v), cg_describe()),
    ]


def _static(v: int) -> list[Script]:
    def j(alias, instance="i-1", **kw):
        return join(alias, version=v, instance_id=instance, **kw)

    def a(alias, **kw):
        return ack(alias, version=v, **kw)

    return [
        script(f"v{v} a second member with a live static member's instance id is refused",
               j("a"), j("b"), cg_describe()),
        script(f"v{v} a static member back after a temporary leave keeps its assignment",
               j("a"), j("b", instance="i-2"), a("a"), a("a"), a("b"),
               leave("a", version=v, member_epoch=-2, instance_id="i-1"),
               j("c"), cg_describe()),
        script(f"v{v} a static member rejoining under its own id after a temporary leave",
               j("a"), leave("a", version=v, member_epoch=-2, instance_id="i-1"),
               j("a", member_id=Id("a")), cg_describe()),
        script(f"v{v} a static member that left for good is replaced by a new member",
               j("a"), leave("a", version=v, instance_id="i-1"), j("c"), cg_describe()),
        script(f"v{v} a heartbeat of a static member after its temporary leave",
               j("a"), leave("a", version=v, member_epoch=-2, instance_id="i-1"),
               cg_heartbeat("a", version=v, member_epoch=1)),
        script(f"v{v} a temporary leave with another member's instance id",
               j("a"), j("b", instance="i-2"),
               leave("a", version=v, member_epoch=-2, instance_id="i-2"), cg_describe()),
        script(f"v{v} a static member's heartbeat naming another instance id",
               j("a"), j("b", instance="i-2"),
               cg_heartbeat("a", version=v, instance_id="i-2"), cg_describe()),
        script(f"v{v} a temporary leave by a member without an instance id",
               join("a", version=v), leave("a", version=v, member_epoch=-2, instance_id="i-9"),
               cg_describe()),
        script(f"v{v} a static member's temporary leave keeps the group epoch",
               j("a"), j("b", instance="i-2"), a("a"), a("a"), a("b"),
               leave("b", version=v, member_epoch=-2, instance_id="i-2"), a("a"),
               cg_describe()),
        script(f"v{v} a replacement joining with a new subscription rebalances",
               j("a"), leave("a", version=v, member_epoch=-2, instance_id="i-1"),
               j("c", subscribed_topic_names=[BAR]), cg_describe()),
    ]


def _regex(v: int) -> list[Script]:
    """Kafka resolves a regex in the background and Cohort at once, so a regex member's first
    replies differ in timing only: the scripts compare the outcome once resolved (a heartbeat
    that restates everything gets the assignment every time: it is polled until it has one)."""
    if v == 0:
        return []  # SubscribedTopicRegex came in v1

    def full(alias, regex, **kw):
        return cg_heartbeat(alias, version=1, rebalance_timeout=30_000,
                            subscribed_topic_names=[], subscribed_topic_regex=regex,
                            topic_partitions=Owned(alias), fields=("error_code", "assignment"),
                            **kw)

    def settled(reply):
        return [tp["topic_id"] for tp in reply["groups"][0]["members"][0]["assignment"][
            "topic_partitions"]]

    return [
        script("v1 a regex subscription is resolved to the topics it matches",
               join("a", version=1, subscribed_topic_names=None,
                    subscribed_topic_regex="cf-ba.*", fields=("error_code",)),
               full("a", "cf-ba.*", until=assigned), cg_describe(fields=("groups",),
                                                                 view=_targets)),
        script("v1 switching from names to a regex moves the member",
               join("a", version=1),
               full("a", "cf-baz", until=lambda r: settled_on(r, [BAZ])),
               cg_describe(until=lambda r: settled(r) == [BAZ], view=_targets)),
        script("v1 a regex beside the topic names, which stay unchanged",
               join("a", version=1),
               cg_heartbeat("a", version=1, subscribed_topic_regex="cf-baz",
                            fields=("error_code",)),
               cg_describe(fields=("groups",), view=_targets)),
        script("v1 a regex matching nothing assigns nothing",
               join("a", version=1, subscribed_topic_names=None,
                    subscribed_topic_regex="cf-nothing-.*"),
               cg_describe()),
    ]


def settled_on(reply: dict, topics: list[str]) -> bool:
    a = reply.get("assignment")
    return a is not None and [tp["topic_id"] for tp in a["topic_partitions"]] == topics


def _targets(reply: dict) -> list:
    """Each member's alias, subscription, assignment and target: what a regex resolved to."""
    return sorted((x["member_id"], x["subscribed_topic_regex"], repr(x["assignment"]),
                   repr(x["target_assignment"])) for x in reply["groups"][0]["members"])


CASES: list[Script] = [
    case for v in VERSIONS
    for case in (*_fencing(v), *_reconciliation(v), *_static(v), *_regex(v))
]
