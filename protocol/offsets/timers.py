"""The offsets rules' one timer, as a typed key (the shard routes timers by type)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OffsetsTimer:
    pass


@dataclass(frozen=True, slots=True)
class RetentionCheck(OffsetsTimer):
    """Time to look for offsets past their retention (a periodic check)."""
