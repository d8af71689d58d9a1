"""Metadata replies in front of an upstream, made once per question and kept for a moment.

In front of an upstream, Metadata is the upstream's answer re-addressed to Cohort's listeners:
the gateway asks the upstream, decodes its reply, renames its brokers and writes the reply
again, and a partition's listener, which cannot answer it itself, forwards each one to the
gateway (a Ray call). A client asks Metadata on every connection it opens and again as its
assignment changes: 1,000 KIP-848 consumers joining one group queued more than 5,000 forwarded
calls on the gateway (Ray's "tasks pending submission" warning), and with those shared, the
gateway still spent most of its loop asking the upstream and writing 1,000-partition replies
(31% writing them, 17% building them, 8% decoding the upstream's: py-spy, 400 consumers,
bench/upstream.py --stable), so the group took three times as long as on Kafka itself.
So the same question, asked while its answer is on its way or was given less than ``KEPT_S``
ago under the same image, shares that answer: one ask, one reply written. Only without an
authorizer, where the answer depends on the question alone (``broker.metadata_question``).
"""

from __future__ import annotations

import asyncio
import functools
import struct
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from actors.gateway.serving import WireRequest
from protocol.wire.codec import EncodedBody
from protocol.wire.topics import Node, distinct_topics

# How long an answer is kept: a client that learns of a new leader a second late retries on
# NOT_LEADER_OR_FOLLOWER, as after any leader change; a new image drops every answer at once.
KEPT_S = 1.0
# How old an answer may be and still be given while the next one is on its way, under the
# same image: a member's heartbeat waits behind its Metadata on the same connection (Kafka
# answers a connection's requests in order), so a slow ask stalls the group, not just the
# client (librdkafka: "Timed out ConsumerGroupHeartbeatRequest ... possibly held back by
# preceeding MetadataRequest"; 1,000 consumers over Tansu never settled).
STALE_S = 10.0
MOST_KEPT = 64
# The most bytes of replies kept, given and last good each (``KeptReplies``): an upstream's
# reply for every topic lists every partition, ~1 MiB for 35,718 of them (issue 30), and 64
# questions' worth was a gateway's idle size again.
KEPT_BYTES = 8 << 20
# The most a kept reply's question may weigh (characters of its topic names, 16 per topic
# id): a question naming more is answered but not kept, so what is kept stays within ~4 MiB.
METADATA_KEPT_QUESTION_CHARS = 64 * 1024
TOPIC_ID_CHARS = 16
_CORRELATION = struct.Struct(">i")

T = TypeVar("T")


def addressed(framed: bytes, correlation_id: int) -> bytes:
    """``framed`` (a reply with its size prefix) under another correlation id: the first field
    of every response header, right after the size."""
    return framed[:4] + _CORRELATION.pack(correlation_id) + framed[8:]


class KeptAnswers(Generic[T]):
    """The answers kept (see the module docstring), for one listener or one gateway.

    When an ask fails (the upstream did not answer Cohort's Metadata within its timeout, as
    Tansu did while carrying the relayed Fetches of 1,000 members), those waiting get the last
    answer this question had, if it had one: a client handles Metadata a few seconds old as it
    handles any leader change, while a failed forward fails its connection, the member's
    connection to its coordinator (bench/upstream.py --stable: members dropped out and the
    group never settled)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._answers: dict[tuple, tuple[float, asyncio.Future]] = {}
        # Under the current image, with its age; and each question's last answer.
        self._fresh: KeptReplies[tuple[float, T]] = _fresh_kept()
        self._last_good: KeptReplies[T] = KeptReplies(KEPT_BYTES, _weight)
        self._image: object = None

    async def answer(self, key: tuple, image: object, ask: Callable[[], Awaitable[T]]) -> T:
        """The answer to the question ``key`` under ``image`` (compared by value): shared if
        asked or answered within ``KEPT_S``, else ``ask()``ed, one ask at a time; while an ask
        is on its way, an answer under this image at most ``STALE_S`` old is given at once. A
        failed ask is shared by those waiting on it and forgotten; they get the question's
        last answer instead, if there is one."""
        if image is not self._image and image != self._image:
            self._answers, self._fresh, self._image = {}, _fresh_kept(), image
        now = self._clock()
        kept = self._answers.get(key)
        if kept is None or (now - kept[0] > KEPT_S and kept[1].done()):
            if len(self._answers) >= MOST_KEPT:
                self._answers.clear()
            future = asyncio.get_running_loop().create_task(ask())
            future.add_done_callback(functools.partial(self._answered, key, image, now))
            kept = self._answers[key] = (now, future)
        if not kept[1].done():
            fresh = self._fresh.get(key)
            if fresh is not None and now - fresh[0] <= STALE_S:
                return fresh[1]
        try:
            return await asyncio.shield(kept[1])
        except Exception:
            if self._answers.get(key) is kept:
                del self._answers[key]
            if key in self._last_good:
                return self._last_good.get(key)
            raise

    def _answered(self, key: tuple, image: object, asked_at: float,
                  future: asyncio.Future) -> None:
        """Keep what an ask answered (a failure no one awaited is retrieved, not logged)."""
        if future.cancelled() or future.exception() is not None:
            return
        value = future.result()
        self._last_good.keep(key, value)
        if image is self._image or image == self._image:
            # An answered ask holds its answer too: one no longer kept fresh is not shared.
            for gone in self._fresh.keep(key, (asked_at, value)):
                kept = self._answers.get(gone)
                if kept is not None and kept[1].done():
                    del self._answers[gone]


class KeptReplies(Generic[T]):
    """Written replies by question, kept within ``budget`` bytes (as ``weight`` counts them):
    the least recently given go first, and a reply bigger than the whole budget is given but
    not kept. By bytes, not only by count: one Metadata reply lists every partition it names
    (~1 MiB for every topic of issue 30's 35,718 partitions), another a single topic (a few
    hundred bytes). At most ``most`` replies too, for their questions' sake (keys of up to
    ``METADATA_KEPT_QUESTION_CHARS``)."""

    def __init__(self, budget: int, weight: Callable[[T], int] | None = None,
                 most: int = MOST_KEPT) -> None:
        self.budget, self.most = budget, most
        self.held = 0
        self._weight = weight or _weight
        self._replies: OrderedDict[tuple, T] = OrderedDict()

    def __len__(self) -> int:
        return len(self._replies)

    def __contains__(self, key: tuple) -> bool:
        return key in self._replies

    def get(self, key: tuple) -> T | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def keep(self, key: tuple, reply: T) -> list[tuple]:
        """Keep ``reply`` as ``key``'s (if it fits at all); the keys let go to make room."""
        size = self._weight(reply)
        if key in self._replies:
            self.held -= self._weight(self._replies.pop(key))
        if size > self.budget:
            return [key]
        gone = []
        while self._replies and (self.held + size > self.budget
                                 or len(self._replies) >= self.most):
            old, value = self._replies.popitem(last=False)
            self.held -= self._weight(value)
            gone.append(old)
        self._replies[key] = reply
        self.held += size
        return gone


def _weight(reply: object) -> int:
    """A kept reply's bytes: written (``EncodedBody``), framed (bytes), or none."""
    if isinstance(reply, EncodedBody):
        return sum(len(part) for part in reply.parts)
    return len(reply) if isinstance(reply, bytes | bytearray) else 0


def _fresh_kept() -> KeptReplies:
    """Answers with the time they were asked, weighed by the answer."""
    return KeptReplies(KEPT_BYTES, lambda aged: _weight(aged[1]))


def metadata_question(req: WireRequest, leader: Node, brokers: tuple[Node, ...]) -> tuple | None:
    """What a Metadata reply depends on (without an authorizer), as a key to keep it by; None
    for a question over ``METADATA_KEPT_QUESTION_CHARS``. Each topic counts once, in the order
    first named, as ``topics.metadata_response`` answers it: naming a topic a million times
    is one question, not a million-entry key. A step per entry named: a big request's is
    asked off the loop (``offload.pure``)."""
    body = req.body
    named = body.get("topics")
    topics_key = None
    if named is not None:
        topics_key = tuple((t.get("name"), t.get("topic_id")) for t in distinct_topics(named))
        chars = sum(len(name or "") + TOPIC_ID_CHARS for name, _ in topics_key)
        if chars > METADATA_KEPT_QUESTION_CHARS:
            return None
    return (req.version, topics_key, body.get("allow_auto_topic_creation"),
            body.get("include_cluster_authorized_operations"),
            body.get("include_topic_authorized_operations"), leader, brokers)
