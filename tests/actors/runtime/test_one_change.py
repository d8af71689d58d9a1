"""Controller changes run one at a time though their writes leave the event loop."""

from __future__ import annotations

import asyncio
import threading

from actors.runtime.one_change import ChangeLock, one_change_at_a_time


class Store(ChangeLock):
    """A controller in miniature: a check, a slow write in a thread, then the apply."""

    def __init__(self) -> None:
        self._version = 0
        self.names: set[str] = set()
        self.pushed: list[tuple[str, int]] = []
        self.writing = threading.Event()

    @one_change_at_a_time()
    async def create(self, name: str) -> bool:
        if name in self.names:
            return False
        await asyncio.to_thread(self.writing.wait, 1.0)  # the disk, slow
        self.names.add(name)
        self._version += 1
        return True

    @one_change_at_a_time(gateway=True)
    async def secure(self) -> None:
        self._version += 1

    async def _push(self) -> None:
        self.pushed.append(("partitions", self._version))

    async def _push_gateway(self) -> None:
        self.pushed.append(("gateway", self._version))


def test_a_second_change_checks_the_state_the_first_one_wrote():
    async def scenario() -> None:
        store = Store()
        first = asyncio.ensure_future(store.create("t"))
        second = asyncio.ensure_future(store.create("t"))
        await asyncio.sleep(0.05)
        assert not first.done() and not second.done()  # the first one's write is in flight
        store.writing.set()
        assert await first is True
        assert await second is False  # it saw "t": no second topic of one name
        assert store.pushed == [("partitions", 1)]  # a change that wrote nothing pushes nothing

    asyncio.run(scenario())


def test_the_event_loop_answers_while_a_change_writes():
    async def scenario() -> None:
        store = Store()
        change = asyncio.ensure_future(store.create("t"))
        await asyncio.sleep(0.05)
        assert store._version == 0  # reads go on: nothing applied before it is durable
        store.writing.set()
        await change

    asyncio.run(scenario())


def test_a_security_change_is_pushed_to_the_gateway_too():
    async def scenario() -> None:
        store = Store()
        await store.secure()
        assert store.pushed == [("partitions", 1), ("gateway", 1)]

    asyncio.run(scenario())
