"""Share groups (KIP-932, as Kafka 4.4 ships them): ShareGroupHeartbeat's rules and errors,
ShareGroupDescribe, and share groups meeting the other types' requests.

Both assign a share-partition only once it is initialised, and bump the group epoch when it
is (``protocol.share.initialization``): Kafka after a round trip to its share coordinator,
Cohort on the shard's next tick. When that bump lands against a second member's join is
timing, not rules, so a second join is compared without its epoch (``JOINED_LATER``), and the
scripts keep the members heartbeating until ShareGroupDescribe shows them assigned
(``settled``) and compare that describe without its epochs.
"""

from __future__ import annotations

from tests.conformance.requests import (
    cg_heartbeat,
    join,
    join_group,
    share_ack,
    share_describe,
    share_fetch,
    share_heartbeat,
    share_join,
)
from tests.conformance.script import BAR, Epoch, Id, Poll, Script, script

JOINED = ("error_code", "member_id", "member_epoch", "heartbeat_interval")
JOINED_LATER = ("error_code", "member_id", "heartbeat_interval")


def sj(alias: str, **kw):
    kw.setdefault("fields", JOINED)
    return share_join(alias, **kw)


def settled(*aliases: str, until=None, **kw) -> Poll:
    """The members heartbeat until ShareGroupDescribe shows each of them holding partitions
    (or ``until`` holds); the describe is compared without epochs (``_no_epochs``)."""
    return Poll((*(share_heartbeat(a, **kw) for a in aliases),
                 share_describe(view=_no_epochs)),
                until or (lambda r: all(_holds(x) for x in r["groups"][0]["members"])
                          and len(r["groups"][0]["members"]) == len(aliases)))


def _holds(member: dict) -> bool:
    return any(tp["partitions"] for tp in member["assignment"]["topic_partitions"])


def _no_epochs(reply: dict) -> dict:
    """A share group's describe without its epochs (Kafka's count share-partition
    initialisations). With several members, their assignments are compared as sizes and the
    partitions held together: Kafka's simple assignor picks by the Java hash codes of member
    ids and hash-map order, Cohort's by id order (balanced either way)."""
    group = {k: v for k, v in reply["groups"][0].items()
             if k not in ("group_epoch", "assignment_epoch")}
    members = [{k: v for k, v in x.items() if k != "member_epoch"} for x in group["members"]]
    if len(members) > 1:
        group["held"] = sorted({(tp["topic_name"], p) for x in members
                                for tp in x["assignment"]["topic_partitions"]
                                for p in tp["partitions"]})
        group["sizes"] = sorted(sum(len(tp["partitions"]) for tp in
                                    x.pop("assignment")["topic_partitions"]) for x in members)
    group["members"] = members
    return group


def _shapes() -> list[Script]:
    def on_bar(r: dict) -> bool:
        (x,) = r["groups"][0]["members"]
        return [tp["topic_name"] for tp in x["assignment"]["topic_partitions"]] == [BAR]

    return [
        script("a share member joins and is assigned the topic", sj("a"), settled("a")),
        script("two share members both get partitions of the topic",
               sj("a"), sj("b", fields=JOINED_LATER), settled("a", "b")),
        script("a share member changing its subscription moves to the new topic",
               sj("a"), settled("a"),
               share_heartbeat("a", subscribed_topic_names=[BAR], fields=("error_code",)),
               settled("a", until=on_bar)),
        script("a share member leaves and the group is empty",
               sj("a"), settled("a"), share_heartbeat("a", member_epoch=-1),
               share_describe(view=_no_epochs)),
        script("a share member subscribed to a missing topic gets nothing",
               sj("a", subscribed_topic_names=["cf-missing"]), share_describe(view=_no_epochs)),
        script("a share member's rack id is kept", sj("a", rack_id="r1"), settled("a")),
    ]


def _errors() -> list[Script]:
    bad_joins = {
        "an empty group id": {"group_id": ""},
        "an empty member id": {"member_id": ""},
        "an empty rack id": {"rack_id": ""},
        "no subscription": {"subscribed_topic_names": None},
        "an empty subscription": {"subscribed_topic_names": []},
        "an epoch below -1": {"member_epoch": -2},
        "an empty topic name": {"subscribed_topic_names": [""]},
    }
    out = [script(f"share join with {what}", sj("a", **fields))
           for what, fields in bad_joins.items()]
    out += [
        script("a share heartbeat with an epoch above the member's is fenced",
               sj("a"), share_heartbeat("a", member_epoch=Epoch("a", 1)),
               share_heartbeat("a", fields=("error_code",))),
        script("a share heartbeat with an epoch below the member's is fenced",
               sj("a"), share_heartbeat("a", member_epoch=Epoch("a", -1)),
               share_heartbeat("a", fields=("error_code",))),
        script("a share heartbeat of an unknown member",
               sj("a"), share_heartbeat("x", member_epoch=Epoch("a"))),
        script("a share heartbeat to a group that does not exist",
               share_heartbeat("a", member_epoch=3)),
        script("a share leave of a group that does not exist",
               share_heartbeat("a", member_epoch=-1)),
        script("a share leave of an unknown member",
               sj("a"), share_heartbeat("x", member_epoch=-1)),
        script("a fenced share member rejoins at epoch 0 under its own id",
               sj("a"), share_heartbeat("a", member_epoch=Epoch("a", 1)),
               sj("a", member_id=Id("a"), fields=("error_code", "member_id")), settled("a")),
        script("a share member rejoining at epoch 0 keeps its id",
               sj("a"), settled("a"), sj("a", member_id=Id("a"),
                                         fields=("error_code", "member_id")), settled("a")),
        script("a share heartbeat with an empty member id after joining",
               sj("a"), share_heartbeat("a", member_id="")),
        script("a share heartbeat with an empty subscription after joining",
               sj("a"), settled("a"), share_heartbeat("a", subscribed_topic_names=[],
                                                      fields=("error_code",)),
               share_describe(view=_no_epochs)),
    ]
    return out


def _other_types() -> list[Script]:
    return [
        script("a consumer heartbeat to a share group", sj("a"), join("b")),
        script("a share heartbeat to a consumer group", join("a"), sj("b")),
        script("a classic join to a share group", sj("a"), join_group("b")),
        script("a consumer heartbeat of a share member's id to its group",
               sj("a"), cg_heartbeat("a", member_epoch=Epoch("a"))),
    ]


def _fetches() -> list[Script]:
    """ShareFetch / ShareAcknowledge and their errors (the share-partitions' leader: the
    bootstrap broker on both). Compared by error codes only (``requests.fetch_errors``)."""
    return [
        script("a member's first share fetch opens its session",
               sj("a"), settled("a"), share_fetch("a", 0)),
        script("a share session's next fetch at the next epoch",
               sj("a"), settled("a"), share_fetch("a", 0), share_fetch("a", 1)),
        script("a share fetch at an epoch that skips one",
               sj("a"), settled("a"), share_fetch("a", 0), share_fetch("a", 5)),
        script("a share fetch at a later epoch without a session",
               sj("a"), settled("a"), share_fetch("a", 3)),
        script("a share fetch that closes its session",
               sj("a"), settled("a"), share_fetch("a", 0), share_fetch("a", -1)),
        # Not compared (docs/decisions.md, "Differential conformance"): a fetch by a member
        # the group does not know, or for a group that does not exist, is NONE on Kafka's
        # share-partition leader and UNKNOWN_MEMBER_ID / GROUP_ID_NOT_FOUND on Cohort's.
        script("a share fetch of an unknown topic",
               sj("a"), settled("a"), share_fetch("a", 0, {"cf-missing": [0]})),
        script("a share acknowledge at epoch 0 is refused",
               sj("a"), settled("a"), share_ack("a", 0)),
        script("a share acknowledge of an offset never acquired",
               sj("a"), settled("a"), share_fetch("a", 0), share_ack("a", 1)),
        script("a share acknowledge without a session",
               sj("a"), settled("a"), share_ack("a", 2)),
        script("a share acknowledge that closes its session",
               sj("a"), settled("a"), share_fetch("a", 0), share_ack("a", -1, offsets={})),
    ]


CASES: list[Script] = [*_shapes(), *_errors(), *_other_types(), *_fetches()]
