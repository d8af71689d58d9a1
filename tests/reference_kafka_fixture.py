"""The ``reference_kafka`` fixture: Apache Kafka 4.4.0 itself, one per test session.

A differential test or a test of a real client's behaviour asks for ``reference_kafka`` and
gets a running ``ReferenceKafka`` (``.bootstrap``, ``.run_tool(...)``). The broker starts only
when the first test asks for it (a session that never does pays nothing) and is killed, its
directory removed, when the session ends. Missing jars fail the test with the fix
(``bash scripts/setup.sh``) rather than skip it: a skipped reference would hide a broken setup.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.tools.reference_kafka import ReferenceKafka


@pytest.fixture(scope="session")
def reference_kafka() -> Iterator[ReferenceKafka]:
    """The session's reference broker, started on first use and stopped at the end."""
    kafka = ReferenceKafka().start()
    try:
        yield kafka
    finally:
        kafka.stop()
