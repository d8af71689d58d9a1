"""Client actors leave their group when the driver that spawned them exits.

What Ray 2.60 does when an actor's owner (the driver) exits, measured: the raylet sends the
actor's worker SIGTERM and SIGKILLs it about two seconds later. An async actor's
``__ray_shutdown__`` and ``atexit`` hooks do not run, and its methods run off the main thread,
so it cannot install a SIGTERM handler either: a client actor Ray kills with its owner
cannot say goodbye, and its members sat in the group for a whole session timeout.

So the spawner gives client actors a lifetime of their own (``lifetime="detached"``) and
Ray's fate-sharing is rebuilt on top, with a goodbye: the spawner makes one tiny
``OwnerAnchor`` actor per ``Cluster`` handle, owned by the driver, so Ray kills it when the
driver exits; each client actor keeps one call to its anchor in flight (``hold``, which never
returns), so Ray's death notice reaches it with no polling, and once Ray reports the anchor dead
it leaves its group (LeaveGroup, or a heartbeat with epoch -1) and kills itself. An idle
watch costs nothing (pinging every half second, as a first version did, kept the anchor at
~7% of a core through a test session). Guarantees: a client spawned without
``detached=True`` does not outlive its owner by more than Ray's death notice + its leave
(bounded by the actor's leave timeout); a call that fails while the anchor restarts (its own
process died, not its owner) is not a death: the watch asks again (``ping``) before it
believes one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import ray
from ray.exceptions import ActorDiedError

log = logging.getLogger(__name__)

POLL_S = 0.5
PING_TIMEOUT_S = 10.0


@ray.remote(num_cpus=0, max_restarts=-1)
class OwnerAnchor:
    """A do-nothing actor that lives exactly as long as its owner (the spawning driver).

    Ray restarts it if its own process dies (a restarting anchor answers
    ``ActorUnavailableError``, which is not a death), and never once its owner is gone, so
    only the owner's exit makes its clients leave."""

    async def hold(self) -> None:
        """Never returns: the call fails only when this actor dies."""
        await asyncio.Event().wait()

    def ping(self) -> bool:
        return True


def owner_anchor() -> Any:
    """A new anchor owned by the calling process (the driver, or the actor that spawns)."""
    return OwnerAnchor.remote()


def watch_owner(anchor: Any, on_gone: Callable[[], Awaitable[None]]) -> asyncio.Task | None:
    """Start watching ``anchor`` from the running event loop (an async actor's ``__init__``):
    when it is dead, await ``on_gone`` (the actor's leave) and kill the calling actor.
    ``None`` (a detached client) watches nothing."""
    if anchor is None:
        return None
    me = ray.get_runtime_context().current_actor
    return asyncio.get_running_loop().create_task(_watch(anchor, on_gone, me))


async def _watch(anchor: Any, on_gone: Callable[[], Awaitable[None]], me: Any) -> None:
    while True:
        try:
            await anchor.hold.remote()
        except ActorDiedError:
            if await _is_dead(anchor):
                break
        except ray.exceptions.RayError as e:
            log.debug("owner watch interrupted, not a death: %s", e)
        await asyncio.sleep(POLL_S)
    log.info("the owner of this client actor exited: leaving the group")
    try:
        await on_gone()
    finally:
        with contextlib.suppress(Exception):
            ray.kill(me, no_restart=True)


async def _is_dead(anchor: Any) -> bool:
    """Is the anchor gone for good? A restarting one answers once it is back."""
    try:
        await asyncio.wait_for(anchor.ping.remote(), PING_TIMEOUT_S)
    except ActorDiedError:
        return True
    except (asyncio.TimeoutError, ray.exceptions.RayError) as e:
        log.debug("owner ping failed, not a death: %s", e)
    return False
