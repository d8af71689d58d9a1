"""Connect's incremental cooperative assignor (issue 14): pure, versioned, client-side.

Kafka Connect workers on the new protocol compute their group's assignment on one worker
the coordinator picks (seed 004). This package is that computation, as Kafka Connect users
know it, with what they complain about fixed:

* connectors and tasks balanced separately, each worker within one of the others, and every
  connector's tasks spread across workers (:mod:`.balance`);
* only what must move moves; deleted and duplicated work leaves first (:mod:`.plan`);
* a departed worker's work is held for ``scheduled_rebalance_max_delay_ms`` (0: reassigned
  at once), a worker that comes back reclaims it at once, matched by instance id when it has
  one, and expired work goes to the least loaded workers (:mod:`.holds`);
* no revocation storms: Kafka's exponential backoff between revoking rounds (:mod:`.storm`);
* memory between rounds travels in versioned member metadata (:mod:`.metadata`), and a
  worker learns when to ask for the next rebalance (:func:`remaining_delay_ms`).

Modules: ``assignor`` (the ``ConnectAssignor``), ``plan`` (one round), ``layout`` (work as
numbered units), ``balance``, ``holds``, ``storm``, ``metadata``.
"""

from assignors.connect.assignor import (
    DEFAULT_MAX_DELAY_MS,
    NAME,
    REASON_NONE,
    REASON_REBALANCE_DUE,
    IncrementalCooperativeAssignor,
)
from assignors.connect.metadata import MAX_VERSION, MIN_VERSION, remaining_delay_ms
from assignors.connect.plan import ConnectRound, plan_round

__all__ = [
    "DEFAULT_MAX_DELAY_MS",
    "MAX_VERSION",
    "MIN_VERSION",
    "NAME",
    "REASON_NONE",
    "REASON_REBALANCE_DUE",
    "ConnectRound",
    "IncrementalCooperativeAssignor",
    "plan_round",
    "remaining_delay_ms",
]
