"""Play a script on a system, and compare two transcripts.

``play`` sends a script's steps in order, each alias on its own connection to the coordinator of
the group its request names (as a member keeps one connection to its coordinator), fills the
placeholders from what this system answered so far, and keeps each reply normalised
(``normalise.Names``). ``compare`` walks two transcripts side by side and lists every
``Difference``: the step, the API, the field's path and both values. Both systems get the same
group ids (fresh for each play), so a reply that names a group reads the same on both.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.conformance.normalise import Names
from tests.conformance.script import (
    API_KEYS,
    TO_BOOTSTRAP,
    Context,
    Poll,
    Receive,
    Script,
    Step,
    resolve,
)
from tests.conformance.systems import DEADLINE_S, POLL_S, NotReached, System
from tests.conformance.wire import Connection

MEMBER_ID_REQUIRED = 79


@dataclass(frozen=True)
class Difference:
    step: int
    api: str
    path: str
    kafka: Any
    cohort: Any

    def __str__(self) -> str:
        return (f"step {self.step} {self.api} {self.path}: kafka={self.kafka!r} "
                f"cohort={self.cohort!r}")


@dataclass
class Transcript:
    system: str
    replies: list[tuple[str, Any]] = field(default_factory=list)  # (api, normalised reply)
    epoch_base: int | None = None


def _group_of(body: dict) -> str | None:
    """The group a request is about: where a group API's request is routed."""
    if isinstance(body.get("group_id"), str):
        return body["group_id"]
    for key in ("group_ids", "groups"):
        names = body.get(key)
        if names and isinstance(names[0], str):
            return names[0]
        if names and isinstance(names[0], dict) and "group_id" in names[0]:
            return names[0]["group_id"]
    return None


class _Play:
    """One script on one system: its connections (one per alias and broker), the replies it
    parked, what it learnt (``Context``) and how it renames (``Names``)."""

    def __init__(self, system: System, script: Script, groups: list[str]) -> None:
        self.system = system
        self.script = script
        self.ctx = Context(groups=groups, topic_ids=dict(system.topic_ids))
        self.names = Names(groups, system.topic_names)
        self.connections: dict[tuple[str, str], Connection] = {}
        self.parked: dict[str, tuple[Connection, Step]] = {}
        self.transcript = Transcript(system.name)

    def connection(self, alias: str, step: Step, body: dict) -> Connection:
        group = None if step.api in TO_BOOTSTRAP or step.to_bootstrap else _group_of(body)
        address = self.system.coordinator(group) if group else self.system.bootstrap
        key = (alias, address)
        if key not in self.connections:
            self.connections[key] = self.system.connect(address)
        return self.connections[key]

    def run(self) -> Transcript:
        try:
            for step in self.script.steps:
                if isinstance(step, Receive):
                    conn, sent = self.parked.pop(step.alias)
                    self.keep(sent, conn.receive())
                elif isinstance(step, Poll):
                    self.poll(step)
                else:
                    self.send(step)
            if self.parked:
                raise AssertionError(f"replies never received: {sorted(self.parked)}")
        finally:
            for conn in self.connections.values():
                conn.close()
        self.transcript.epoch_base = self.names.epoch_base
        return self.transcript

    def send(self, step: Step) -> None:
        version = step.version if step.version is not None else self.system.versions[step.api]
        deadline = time.monotonic() + DEADLINE_S
        while True:
            body = resolve(step.body, self.ctx)
            conn = self.connection(step.alias, step, body)
            if not step.wait:
                conn.send(API_KEYS[step.api], version, body)
                self.parked[step.alias] = (conn, step)
                return
            reply = conn.call(API_KEYS[step.api], version, body)
            if step.until is None or step.until(self.peek(step, reply)):
                self.keep(step, reply)
                return
            self.learn(step, reply)  # a client acts on every reply, satisfying or not
            if time.monotonic() > deadline:
                raise NotReached(f"{self.system.name}: {step.api} of {step.alias} never "
                                 f"satisfied its condition; last reply {reply}")
            time.sleep(POLL_S)

    def poll(self, poll: Poll) -> None:
        deadline = time.monotonic() + DEADLINE_S
        *driving, last = poll.steps
        while True:
            for step in driving:
                self.learn(step, self.call(step))
            reply = self.call(last)
            if poll.until(self.peek(last, reply)):
                self.keep(last, reply)
                return
            self.learn(last, reply)
            if time.monotonic() > deadline:
                raise NotReached(f"{self.system.name}: a poll never satisfied its condition; "
                                 f"last reply {reply}")
            time.sleep(POLL_S)

    def call(self, step: Step) -> dict:
        version = step.version if step.version is not None else self.system.versions[step.api]
        body = resolve(step.body, self.ctx)
        return self.connection(step.alias, step, body).call(API_KEYS[step.api], version, body)

    def peek(self, step: Step, reply: dict) -> Any:
        """The reply normalised as it would be kept, without learning from it."""
        saved = (dict(self.names.aliases), self.names.epoch_base, self.names._unknown)
        self.learn(step, reply, commit=False)
        try:
            return self.names(reply)
        finally:
            self.names.aliases, self.names.epoch_base, self.names._unknown = saved

    def learn(self, step: Step, reply: dict, commit: bool = True) -> None:
        """The alias's member id (and, when ``commit``, its epoch and assignment) from a
        reply to its own request."""
        if not step.record:
            return
        error = reply.get("error_code", 0)
        member_id = reply.get("member_id")
        if isinstance(member_id, str) and member_id and error in (0, MEMBER_ID_REQUIRED):
            self.names.learn(member_id, step.alias)
            if commit:
                self.ctx.member_ids[step.alias] = member_id
        if not commit or error != 0:
            return
        for key in ("member_epoch", "generation_id"):
            if isinstance(reply.get(key), int):
                self.ctx.epochs[step.alias] = reply[key]
        assignment = reply.get("assignment")
        if isinstance(assignment, dict) and "topic_partitions" in assignment:
            self.ctx.owned[step.alias] = [
                {"topic_id": tp["topic_id"], "partitions": list(tp["partitions"])}
                for tp in assignment["topic_partitions"]]

    def keep(self, step: Step, reply: dict) -> None:
        self.learn(step, reply)
        if step.fields is not None:
            reply = {k: v for k, v in reply.items() if k in step.fields}
        kept = self.names(reply)
        self.transcript.replies.append((step.api, step.view(kept) if step.view else kept))


def play(system: System, script: Script, groups: list[str]) -> Transcript:
    return _Play(system, script, groups).run()


def play_both(kafka: System, cohort: System, script: Script,
              pool: ThreadPoolExecutor) -> tuple[Transcript, Transcript]:
    """The script on both systems at once (each on its own thread: they share nothing), with
    the same fresh group ids."""
    token = uuid.uuid4().hex[:8]
    groups = [f"cf-{token}-{n}" for n in range(script.groups)]
    on_kafka = pool.submit(play, kafka, script, groups)
    on_cohort = pool.submit(play, cohort, script, groups)
    return on_kafka.result(), on_cohort.result()


def compare(kafka: Transcript, cohort: Transcript) -> list[Difference]:
    out: list[Difference] = []
    if kafka.epoch_base != cohort.epoch_base:
        out.append(Difference(0, "*", "epoch_base", kafka.epoch_base, cohort.epoch_base))
    for n, ((api, k), (_, c)) in enumerate(zip(kafka.replies, cohort.replies, strict=True), 1):
        _walk(n, api, "", k, c, out)
    return out


def _walk(step: int, api: str, path: str, k: Any, c: Any, out: list[Difference]) -> None:
    if isinstance(k, dict) and isinstance(c, dict):
        for key in sorted(set(k) | set(c)):
            _walk(step, api, f"{path}.{key}" if path else key, k.get(key, "<absent>"),
                  c.get(key, "<absent>"), out)
    elif isinstance(k, list) and isinstance(c, list) and len(k) == len(c) and all(
            isinstance(x, dict) for x in k + c):
        for n, (x, y) in enumerate(zip(k, c, strict=True)):
            _walk(step, api, f"{path}.{n}", x, y, out)
    elif k != c:
        out.append(Difference(step, api, path, k, c))
