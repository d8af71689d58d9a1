"""An idle partition on an object store asks whether it is still the writer (a HEAD of its next
slot) at most once per interval, off the event loop, and a store that fails the check does not
reload the shard: only a confirmed fence stops it serving."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from actors.runtime import object_log
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import ObjectOps, open_store
from actors.runtime.turns import PartitionTurns
from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from tests.actors.runtime.test_turns import commit, commit_error, eventually, fetch_image


class CountedHeads(ObjectOps):
    """The store's calls, noting the thread of every HEAD; ``failing`` makes HEADs fail."""

    def __init__(self) -> None:
        self.head_threads: list[int] = []
        self.failing = False

    def exists(self, store, key):
        self.head_threads.append(threading.get_ident())
        if self.failing:
            raise OSError("HEAD: connection reset (injected)")
        return super().exists(store, key)


def fetch(group: str = "g") -> m.OffsetFetchRequest:
    return m.OffsetFetchRequest(group_id=group, topics=None)


async def started(url: str, ops: ObjectOps) -> PartitionTurns:
    storage = ObjectLog(open_store(url), "offsets-0", ops=ops)
    turns = PartitionTurns("offsets-0", storage, CoordinatorConfig(), fetch_image)
    turns.task = asyncio.get_running_loop().create_task(turns.run())  # type: ignore[attr-defined]
    await eventually(lambda: turns.state == "active")
    return turns


def test_idle_turns_check_the_fence_at_most_once_an_interval_and_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(object_log, "FENCE_CHECK_INTERVAL_S", 0.2)

    async def scenario() -> None:
        ops = CountedHeads()
        turns = await started(f"memory://{uuid.uuid4().hex}", ops)
        loop_thread = threading.get_ident()
        ops.head_threads.clear()
        for _ in range(50):  # fifty read-only turns, well within one interval
            [reply] = await turns.handle_batch([fetch()])
            assert reply.error_code == Errors.NONE
        assert len(ops.head_threads) <= 1
        assert loop_thread not in ops.head_threads, "never a HEAD on the event loop"
        turns.task.cancel()

    asyncio.run(scenario())


def test_a_store_error_during_a_fence_check_keeps_serving_and_a_confirmed_fence_stops_it(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(object_log, "FENCE_CHECK_INTERVAL_S", 0.05)

    async def scenario() -> None:
        url = f"memory://{uuid.uuid4().hex}"
        ops = CountedHeads()
        turns = await started(url, ops)
        assert commit_error((await turns.handle_batch([commit("g", 1)]))[0]) == Errors.NONE
        ops.failing = True
        for _ in range(10):  # the checks fail: not a fence, not a failed write
            [reply] = await turns.handle_batch([fetch()])
            assert reply.error_code == Errors.NONE
            await asyncio.sleep(0.02)
        assert len(ops.head_threads) >= 2
        assert turns.state == "active" and turns.recoveries == 0 and turns.turn_failures == 0

        ops.failing = False
        newer = await started(url, ObjectOps())  # a newer incarnation loads: the old is fenced
        for _ in range(50):
            [reply] = await turns.handle_batch([fetch()])
            if turns.state == "fenced":
                break
            await asyncio.sleep(0.02)
        assert turns.state == "fenced"
        assert commit_error((await turns.handle_batch([commit("g", 2)]))[0]) == (
            Errors.NOT_COORDINATOR)
        turns.task.cancel()
        newer.task.cancel()

    asyncio.run(scenario())
