"""ConsumerGroupHeartbeat's validation rules and errors (seed 000; Kafka's
``throwIfConsumerGroupHeartbeatRequestIsInvalid``), each at both versions Kafka 4.4 serves.

A rule is checked on a join (epoch 0) and, where it applies, on the heartbeat of a member that
joined first, so the refusal is compared on a live group as well as a new one.
"""

from __future__ import annotations

from tests.conformance.requests import cg_heartbeat, join, leave, owns
from tests.conformance.script import BAR, FOO, GROUP, Epoch, Id, Script, script

VERSIONS = (0, 1)


def _join_cases(v: int) -> list[Script]:
    """A first heartbeat with one field wrong."""
    bad_joins = {
        "an empty group id": {"group_id": ""},
        "an empty member id": {"member_id": ""},
        "an empty instance id": {"instance_id": ""},
        "an empty rack id": {"rack_id": ""},
        "no rebalance timeout": {"rebalance_timeout": -1},
        "a zero rebalance timeout": {"rebalance_timeout": 0},
        "a negative rebalance timeout": {"rebalance_timeout": -5},
        "no subscription": {"subscribed_topic_names": None},
        "an empty topic list": {"subscribed_topic_names": []},
        "an empty topic list and an empty regex": {"subscribed_topic_names": [],
                                                    "subscribed_topic_regex": ""},
        "topic names and a regex together": {"subscribed_topic_regex": "cf-ba.*"},
        "topic names and an empty regex": {"subscribed_topic_regex": ""},
        "only a regex": {"subscribed_topic_names": None, "subscribed_topic_regex": "cf-ba.*"},
        "an empty topic list and a regex": {"subscribed_topic_names": [],
                                            "subscribed_topic_regex": "cf-ba.*"},
        "an empty topic name": {"subscribed_topic_names": [""]},
        "a missing topic": {"subscribed_topic_names": ["cf-missing"]},
        "null owned partitions": {"topic_partitions": None},
        "owned partitions": {"topic_partitions": owns({FOO: [0]})},
        "an unknown server assignor": {"server_assignor": "no-such-assignor"},
        "an empty server assignor": {"server_assignor": ""},
        "the range assignor": {"server_assignor": "range"},
        "the uniform assignor": {"server_assignor": "uniform"},
        "a negative epoch below -2": {"member_epoch": -3},
        "epoch -2 and no instance id": {"member_epoch": -2},
        "a rack id": {"rack_id": "rack-1"},
        "an instance id": {"instance_id": "static-1"},
    }
    if v == 0:  # SubscribedTopicRegex came in v1: a v0 join cannot carry one
        bad_joins = {k: f for k, f in bad_joins.items() if "subscribed_topic_regex" not in f}
        bad_joins["a member id of its own"] = {"member_id": Id("a")}
    return [script(f"v{v} join with {what}", join("a", version=v, **fields,
                                                   **_resolved_later(fields)))
            for what, fields in bad_joins.items()]


def _resolved_later(fields: dict) -> dict:
    """A join with a valid regex: Kafka resolves it in the background, Cohort at once, so the
    join's assignment is timing; its outcome (error, id, epoch) is compared."""
    if fields.get("subscribed_topic_regex"):
        return {"fields": ("error_code", "member_id", "member_epoch")}
    return {}


REGEXES = {
    "an unclosed group": "(",
    "an unclosed class": "[a-",
    "a dangling star": "*cf",
    "a bad repetition": "a{2,1}",
    "a lookahead": "cf-(?=foo)",
    "a backreference": "(cf)\\1",
    "a possessive quantifier": "cf-.*+",
    "a unicode class": "cf-\\p{L}+",
    "an anchored pattern": "^cf-ba.*$",
    "a character class": "cf-ba[rz]",
}


def _regex_cases(v: int) -> list[Script]:
    if v == 0:
        return []  # SubscribedTopicRegex came in v1
    out = [script(f"v{v} join with a regex with {what}",
                  join("a", version=v, subscribed_topic_names=None,
                       subscribed_topic_regex=pattern,
                       fields=("error_code", "member_id", "member_epoch")))
           for what, pattern in REGEXES.items()]
    out.append(script(f"v{v} a member switching to an invalid regex is refused and keeps its "
                      "subscription",
                      join("a", version=v),
                      cg_heartbeat("a", version=v, subscribed_topic_regex="(",
                                   subscribed_topic_names=None),
                      cg_heartbeat("a", version=v)))
    return out


def _heartbeat_cases(v: int) -> list[Script]:
    """A joined member's next heartbeat with one field wrong, then a good one: a refusal
    changes nothing."""
    bad = {
        "an empty group id": {"group_id": ""},
        "an empty member id": {"member_id": ""},
        "an empty instance id": {"instance_id": ""},
        "an empty rack id": {"rack_id": ""},
        "a zero rebalance timeout": {"rebalance_timeout": 0},
        "a negative rebalance timeout": {"rebalance_timeout": -7},
        "topic names and a regex together": {"subscribed_topic_names": [FOO],
                                             "subscribed_topic_regex": "cf-ba.*"},
        "an empty topic name": {"subscribed_topic_names": [""]},
        "an unknown server assignor": {"server_assignor": "no-such-assignor"},
        "a negative owned partition": {"topic_partitions": owns({FOO: [-1]})},
        "an epoch below -2": {"member_epoch": -3},
        "epoch -2 and no instance id": {"member_epoch": -2},
        "an empty topic list": {"subscribed_topic_names": []},
    }
    return [script(f"v{v} heartbeat with {what} is refused and changes nothing",
                   join("a", version=v), cg_heartbeat("a", version=v, **fields),
                   cg_heartbeat("a", version=v))
            for what, fields in bad.items()]


def _unknown_cases(v: int) -> list[Script]:
    return [
        script(f"v{v} heartbeat with an epoch to a group that does not exist",
               cg_heartbeat("a", version=v, member_epoch=5)),
        script(f"v{v} leave of a group that does not exist",
               leave("a", version=v)),
        script(f"v{v} static leave of a group that does not exist",
               leave("a", version=v, member_epoch=-2, instance_id="static-1")),
        script(f"v{v} heartbeat of an unknown member in a live group",
               join("a", version=v), cg_heartbeat("x", version=v, member_epoch=Epoch("a"))),
        script(f"v{v} leave of an unknown member in a live group",
               join("a", version=v), leave("x", version=v)),
        script(f"v{v} heartbeat of a member after it left",
               join("a", version=v), leave("a", version=v),
               cg_heartbeat("a", version=v, member_epoch=1)),
        script(f"v{v} a member that left rejoins under its own id",
               join("a", version=v), leave("a", version=v),
               join("a", version=v, member_id=Id("a"))),
        script(f"v{v} a join naming a second group in the same request is about that group",
               join("a", version=v, group_id=GROUP), join("b", version=v, topics=[BAR])),
    ]


CASES: list[Script] = [
    case for v in VERSIONS
    for case in (*_join_cases(v), *_regex_cases(v), *_heartbeat_cases(v), *_unknown_cases(v))
]
