"""A coordinator's garbage policy (``actors.runtime.gc_policy``): young passes seldom, the
loaded state frozen after every load, and a dropped state's cycles reclaimed at a reload."""

from __future__ import annotations

import asyncio
import gc
import weakref

from actors.runtime import gc_policy
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.turns import PartitionTurns
from protocol.errors import Errors
from tests.actors.runtime.test_turns import (
    CONFIG,
    Clock,
    commit,
    commit_error,
    eventually,
    fetch_image,
    inline,
    run,
)


class _Cycle:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_settling_reclaims_cycles_left_before_it_and_freezes_what_is_held():
    before = gc.get_threshold()
    try:
        gc_policy.tune()
        assert gc.get_threshold() == (gc_policy.GEN0_THRESHOLD, *gc_policy.OLDER_THRESHOLDS)
        kept = _Cycle()
        dropped = weakref.ref(_Cycle())  # its only strong reference is its own cycle
        gc_policy.settle()
        assert dropped() is None
        assert gc.get_freeze_count() > 0
        held = weakref.ref(kept)
        del kept
        gc_policy.settle()  # the next load unfreezes first: a dropped shard is reclaimed
        assert held() is None
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_every_load_runs_the_hook_before_the_first_turn_reloads_too():
    async def scenario() -> None:
        medium = MemoryMedium()
        states: list[str] = []
        turns = PartitionTurns("offsets-0", MemoryStorage(medium), CONFIG, fetch_image,
                               clock_ms=Clock(), in_thread=inline,
                               on_loaded=lambda: states.append(turns.state))
        asyncio.get_running_loop().create_task(turns.run())
        await eventually(lambda: turns.state == "active")
        assert states == ["loading"]  # after the load, before it serves
        medium.failing = True
        [reply] = await turns.handle_batch([commit("g", 1)])
        assert commit_error(reply) == Errors.COORDINATOR_NOT_AVAILABLE
        medium.failing = False
        await eventually(lambda: turns.state == "active" and len(states) == 2)
        assert states == ["loading", "recovering"]

    run(scenario)
