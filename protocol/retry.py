"""How long a client waits before trying again: 100 ms doubling up to 1 s.

Kafka's clients share one policy (``retry.backoff.ms`` 100, ``retry.backoff.max.ms`` 1000), and
so does Cohort: both client halves (KIP-848 and classic) and the driver's ``Cluster.call`` back
off through here. The exponent is capped so the counter stays small however long a coordinator
is away.
"""

from __future__ import annotations

RETRY_BACKOFF_S = 0.1
RETRY_BACKOFF_MAX_S = 1.0
RETRY_EXPONENT_MAX = 4


def backoff_s(retries: int) -> float:
    """The wait before the next attempt, after ``retries`` failed ones in a row."""
    return min(RETRY_BACKOFF_S * 2**retries, RETRY_BACKOFF_MAX_S)


def next_retries(retries: int) -> int:
    """The count to pass to ``backoff_s`` after one more failure (capped: bounded growth)."""
    return min(retries + 1, RETRY_EXPONENT_MAX)
