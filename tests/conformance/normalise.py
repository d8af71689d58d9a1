"""What of a reply is compared: the outcome, without what differs by construction.

Two correct coordinators still differ in the bytes they answer: member ids are random, topic
ids are each broker's own, throttle times and error messages are free text or load, a set is
sent in any order, and an epoch counts from wherever the group started. ``Names`` rewrites a
reply (plain values from ``wire``) so that only outcomes remain:

- error codes by Kafka's names (``FENCED_MEMBER_EPOCH``), messages and throttle times dropped;
- member ids by the alias that received them (``<a>``; an id no alias owns: ``<?1>``, in order
  of appearance), topic ids by topic name, the conversation's group ids as ``G0``, ``G1``;
- epochs and generations relative to the first positive one the conversation saw (``E+0``,
  ``E+1``; 0, -1 and -2 are kept: they mean join, leave and static leave), that first value
  kept once as the transcript's ``epoch_base`` so a different starting epoch is one difference,
  not one per reply;
- every list sorted (partitions, assignments, members and groups are sets on the wire), and a
  list of groups (ListGroups) cut to the conversation's own: the brokers hold others' too.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

DROPPED = frozenset({"throttle_time", "error_message"})
MEMBER_ID_KEYS = frozenset({"member_id", "leader"})
EPOCH_KEYS = frozenset({"member_epoch", "group_epoch", "assignment_epoch", "generation_id"})
ERROR_KEYS = frozenset({"error_code", "error", "topic_config_error_code", "acknowledge_error_code"})


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"ERROR_{code}"


def _order(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, int) else (1, 0, repr(value))


class Names:
    """One conversation's renaming on one system (ids learnt as replies arrive)."""

    def __init__(self, groups: list[str], topic_names: dict[uuid.UUID, str]) -> None:
        self.groups = {g: f"G{n}" for n, g in enumerate(groups)}
        self.topic_names = topic_names
        self.aliases: dict[str, str] = {}
        self._unknown = 0
        self.epoch_base: int | None = None

    def learn(self, member_id: str, alias: str) -> None:
        if member_id and member_id not in self.aliases:
            self.aliases[member_id] = f"<{alias}>"

    def member(self, member_id: str) -> str:
        if not member_id:
            return member_id
        if member_id not in self.aliases:
            self._unknown += 1
            self.aliases[member_id] = f"<?{self._unknown}>"
        return self.aliases[member_id]

    def epoch(self, value: int) -> int | str:
        if value <= 0:
            return value
        if self.epoch_base is None:
            self.epoch_base = value
        return f"E{value - self.epoch_base:+d}"

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items() if k not in DROPPED}
        if isinstance(value, list):
            if value and all(isinstance(v, dict) and "group_id" in v for v in value):
                value = [v for v in value if v["group_id"] in self.groups]  # ours, not others'
            return sorted((self(v, key) for v in value), key=_order)
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if key in ERROR_KEYS:
                return error_name(value)
            if key in EPOCH_KEYS:
                return self.epoch(value)
            return value
        if isinstance(value, uuid.UUID):
            return self.topic_names.get(value, "<unknown topic id>" if value.int else value)
        if isinstance(value, str):
            if key in MEMBER_ID_KEYS or value in self.aliases:
                return self.member(value)
            return self.groups.get(value, value)
        return value
