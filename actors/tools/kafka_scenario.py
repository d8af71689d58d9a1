"""One scenario, any Kafka cluster: three real consumers join, a fourth joins, one leaves.

The differential oracle runs it twice with the same clients (confluent-kafka), the same
group protocol and the same heartbeat interval: once through Cohort's gateway, once against
librdkafka's mock cluster (``kafka_mock``). Each step is timed from the action (starting or
closing a consumer) to convergence: every partition owned by exactly one live member, and
every live member owning some. The members' timelines come back too, so the same ownership
check (invariant 1) can be applied to both sides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from actors.clients.kafka_consumer import KafkaMember
from actors.tools.invariants import Violation, check_exclusive_ownership

STEP_TIMEOUT_S = 60.0
POLL_S = 0.01


@dataclass
class Step:
    name: str
    seconds: float
    converged: bool
    owners: dict[str, list[tuple[str, int]]]


@dataclass
class ScenarioResult:
    steps: list[Step] = field(default_factory=list)
    timelines: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def overlaps(self) -> list[Violation]:
        """Invariant 1 on the members' callback timelines."""
        return check_exclusive_ownership(self.timelines, {}, float("inf"))


def converged(live: list[KafkaMember], partitions: list[tuple[str, int]]) -> bool:
    """Every partition owned once and the shares balanced (within one, as the uniform and
    range assignors leave one topic): a step is done when its target is reached, not when
    every partition merely has some owner mid-reconciliation."""
    shares = [m.assignment() for m in live]
    owned = [tp for share in shares for tp in share]
    sizes = [len(share) for share in shares]
    return (sorted(owned) == sorted(partitions) and min(sizes) > 0
            and max(sizes) - min(sizes) <= 1)


def run_scenario(bootstrap: str, group: str, topic: str, partitions: int,
                 protocol: str = "consumer", config: dict | None = None,
                 timeout_s: float = STEP_TIMEOUT_S) -> ScenarioResult:
    """3 join, a 4th joins, the first leaves; each step timed to convergence."""
    parts = [(topic, p) for p in range(partitions)]
    result = ScenarioResult()
    started: list[KafkaMember] = []

    def member() -> KafkaMember:
        m = KafkaMember(bootstrap, group, [topic], protocol=protocol, config=config)
        started.append(m)
        return m.start()

    def step(name: str, live: list[KafkaMember], since: float) -> None:
        deadline = since + timeout_s
        while not (ok := converged(live, parts)) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        seconds = time.monotonic() - since
        owners = {f"member-{started.index(m)}": m.assignment() for m in live}
        result.steps.append(Step(name, seconds, ok, owners))

    try:
        t0 = time.monotonic()
        live = [member() for _ in range(3)]
        step("3 consumers join", live, t0)
        t0 = time.monotonic()
        live.append(member())
        step("a 4th joins", live, t0)
        t0 = time.monotonic()
        leaver = live.pop(0)
        leaver.stop(leave=True)
        step("one leaves", live, t0)
    finally:
        for m in started:
            m.stop(leave=True)
            result.errors += m.errors
            result.timelines += m.timeline()
    return result
