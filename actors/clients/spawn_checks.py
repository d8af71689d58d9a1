"""What ``spawn_consumer(s)`` and ``spawn_worker`` refuse at the call, before any actor starts.

A client actor validates its arguments in its constructor, and a constructor that raises
leaves a dead actor whose error surfaces only at the first call on its handle, far from the
mistake. These checks run in the caller instead: each raises ``ValueError`` naming the
argument, what was given and what is accepted, and nothing is spawned. They only repeat
the rules of the pieces the actors build (the Connect assignor's metadata versions, the
classic and client-side assignor names, the subscription), reading those pieces' own
tables, so a check cannot drift from what the actor would accept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.clients.consumer import CLIENT_ASSIGNORS, MAX_MEMBERS_PER_ACTOR, PartitionAssignor
from assignors.classic import CLASSIC_ASSIGNORS
from assignors.connect.metadata import MAX_VERSION, MIN_VERSION
from protocol.classic.connect_protocol import OFFERED

CONSUMER_PROTOCOLS = ("consumer", "classic")
WORKER_PROTOCOLS = ("connect", "classic")


def check_worker_spawn(protocol: str, assignor_versions: Any, options: Mapping[str, Any]) -> None:
    """Refuse a Connect worker the ``ConnectWorker`` actor would fail to build."""
    if protocol not in WORKER_PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: 'connect' or 'classic'")
    check_assignor_versions(assignor_versions)
    if protocol == "classic" and options.get("connect_protocol", "sessioned") not in OFFERED:
        raise ValueError(f"connect_protocol {options['connect_protocol']!r} is not one of "
                             f"{sorted(OFFERED)}")
    if protocol == "connect" and "connect_protocol" in options:
        raise ValueError("connect_protocol is a classic Connect setting (protocol='classic')")
    _not_negative(options, "scheduled_rebalance_max_delay_ms")


def check_assignor_versions(versions: Any) -> tuple[int, int]:
    """``(minimum, maximum)`` metadata versions the Connect assignor implements, as a tuple."""
    try:
        lo, hi = versions
    except (TypeError, ValueError):
        raise ValueError(
            f"assignor_versions must be a (minimum, maximum) pair, got {versions!r}"
        ) from None
    if not (isinstance(lo, int) and isinstance(hi, int)
            and MIN_VERSION <= lo <= hi <= MAX_VERSION):
        raise ValueError(
            f"assignor_versions {tuple(versions)!r} is outside what the Connect assignor "
            f"implements: {MIN_VERSION} <= minimum <= maximum <= {MAX_VERSION}"
        )
    return lo, hi


def check_consumer_spawn(protocol: str, n: int, topics: list[str] | None,
                         options: Mapping[str, Any]) -> None:
    """Refuse a consumer the ``ConsumerClient`` / ``ClassicConsumer`` actor would fail to build."""
    if protocol not in CONSUMER_PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: 'consumer' or 'classic'")
    _not_negative(options, "revocation_cost_ms")
    if protocol == "classic":
        if n != 1:
            raise ValueError("a classic consumer actor hosts exactly one member")
        if not topics:
            raise ValueError("a classic consumer subscribes to a list of topic names")
        names = list(options.get("assignors", ("range",)))
        unknown = [a for a in names if a not in CLASSIC_ASSIGNORS]
        if unknown or not names or len(set(names)) != len(names):
            raise ValueError(f"assignors {names!r}: name at least one, each once, from "
                             f"{sorted(CLASSIC_ASSIGNORS)}")
        return
    if not 0 < n <= MAX_MEMBERS_PER_ACTOR:
        raise ValueError(f"n must be in 1..{MAX_MEMBERS_PER_ACTOR}, got {n}")
    if (topics is None) == (options.get("topic_regex") is None):
        raise ValueError("subscribe to topic names or to a regex (topic_regex), exactly one")
    specs = options.get("client_assignors") or ()
    unknown = [s for s in specs if not isinstance(s, PartitionAssignor | str)
               or (isinstance(s, str) and s not in CLIENT_ASSIGNORS)]
    if unknown:
        raise ValueError(f"unknown client assignors {unknown!r}: names from "
                         f"{sorted(CLIENT_ASSIGNORS)} or PartitionAssignor objects")
    if specs and options.get("server_assignor"):
        raise ValueError("server_assignor and client_assignors cannot be used together")


def _not_negative(options: Mapping[str, Any], name: str) -> None:
    value = options.get(name)
    if value is not None and value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
