"""What the session's conversations found, kept for the terminal summary (its own module, so
the test and the conftest's summary hook share one object however pytest imports them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Tally:
    cases: int = 0
    differences: int = 0
    allowed: Counter = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)


TALLY = Tally()
