"""The ``reference_kafka`` fixture: Apache Kafka 4.4.0 itself, one per test session.

A differential test or a test of a real client's behaviour asks for ``reference_kafka`` and
gets a running ``ReferenceKafka`` (``.bootstrap``, ``.run_tool(...)``). The broker starts only
when the session has a test that asks for it (a session that never does pays nothing): once
the tests are collected, in a thread of its own, so its 5-20 s start overlaps what the session
does first (starting Ray, say); the first test that asks for it waits for it. It is killed, its
directory removed, when the session ends. Missing jars fail the test with the fix
(``bash scripts/setup.sh``) rather than skip it: a skipped reference would hide a broken setup.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from actors.tools.reference_kafka import ReferenceKafka

FIXTURE = "reference_kafka"


class _EarlyStart:
    """The session's broker, started in a thread as soon as the tests are collected."""

    def __init__(self) -> None:
        self.kafka = ReferenceKafka()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="reference-kafka-start",
                                        daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self.kafka.start()
        except BaseException as e:  # handed to the first test that asks
            self.error = e

    def result(self) -> ReferenceKafka:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.kafka


_early: list[_EarlyStart] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or _early:
        return
    if any(FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        _early.append(_EarlyStart())


@pytest.fixture(scope="session")
def reference_kafka() -> Iterator[ReferenceKafka]:
    """The session's reference broker (started early when collected tests ask for it, else
    now), stopped at the end."""
    early = _early.pop() if _early else None
    kafka = early.result() if early is not None else ReferenceKafka().start()
    try:
        yield kafka
    finally:
        kafka.stop()
