"""How a driver (a script, a test, the ``cohort`` command, a Ray client) joins the Ray cluster
Cohort runs on, and how it sees Cohort's named actors come and go.

Kept apart from ``Cluster`` because the service commands need it without a running Cohort:
``cohort start`` must join a Ray without starting one of its own, ``cohort stop`` must know when
Ray has released the actors' names, and every driver must find Ray's token itself.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from typing import Any

import ray
from ray.exceptions import RayTaskError

from actors.runtime.controller import NAMESPACE
from protocol.errors import CoordinatorError

# How long ``wait_released`` waits for Ray to release killed actors' names (a ``start`` right
# after a ``stop`` must create new actors, not find the dying ones).
RELEASE_TIMEOUT_S = 60.0
# How long ``init_ray`` waits for a TCP connection to a given address before calling it dead.
PROBE_TIMEOUT_S = 5.0


def wait_released(names: Iterable[str], timeout_s: float = RELEASE_TIMEOUT_S) -> None:
    """Poll until no actor of ``names`` (namespace ``cohort``) can be found any more."""
    deadline = time.monotonic() + timeout_s
    pending = list(names)
    while pending:
        pending = [n for n in pending if named_actor_exists(n)]
        if pending and time.monotonic() > deadline:
            raise TimeoutError(f"Ray still lists {pending} {timeout_s} s after they were killed")
        if pending:
            time.sleep(0.1)


def named_actor_exists(name: str) -> bool:
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def _have_token() -> bool:
    return bool(
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    )


def init_ray(address: str | None, start_local: bool = True) -> bool:
    """Join the Ray this process should use; True when we started a local one ourselves."""
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    if _have_token() and "RAY_AUTH_MODE" not in os.environ:
        # Ray >= 2.59 clusters require a token by default; a driver or Ray client sends the
        # one it finds (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) only in token
        # mode, which an operator's shell has not set (a cluster without auth accepts a
        # token-mode driver too). Ray reads the mode when it is imported, so its config is
        # re-read after the switch.
        os.environ["RAY_AUTH_MODE"] = "token"
        from ray._raylet import Config

        Config.initialize("")
    _probe(target)
    try:
        ray.init(address=target, namespace=NAMESPACE, log_to_driver=False)
        _messages_to_log()
        return False
    except ConnectionError:
        if not start_local or address is not None:
            raise
    ray.init(namespace=NAMESPACE, include_dashboard=False, log_to_driver=False)
    _messages_to_log()
    return True


def _messages_to_log() -> None:
    """A ``cohort`` command names a log for the raylet's messages (``COHORT_RAY_MESSAGES_LOG``,
    set by ``actors.tools.cli``): keep them there (``keep_ray_messages_in_log``)."""
    path = os.environ.get("COHORT_RAY_MESSAGES_LOG")
    if path:
        keep_ray_messages_in_log(path)


def _probe(target: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Fail at once when nothing listens at a ``host:port`` (or ``ray://host:port``) address:
    Ray itself would retry the connection for minutes before giving up."""
    host, sep, port = target.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(f"nothing answers at {target}: {e.strerror or e}") from None


def get_unwrapped(ref) -> Any:
    """``ray.get`` that raises an actor's refusal as the plain ``CoordinatorError`` it is."""
    try:
        return ray.get(ref)
    except RayTaskError as e:
        if isinstance(e.cause, CoordinatorError):
            raise e.cause from None
        raise


def keep_ray_messages_in_log(path: str) -> None:
    """Send the raylet's messages to this driver (worker pool warnings: "16 PYTHON worker
    processes have been started ..."; "Task Controller.image failed ... will be retried"
    after a chaos kill) to ``path`` instead of the terminal, where they interleave with a
    command's own progress. They are Ray's expected chatter under Cohort's load (hundreds of
    ``num_cpus=0`` actors; actors killed on purpose) and stay one ``tail`` away.

    Ray prints them from its error-listener thread through ``worker.print_to_stdstream``,
    which offers no switch (``log_to_driver=False`` silences only the workers' own output),
    so that one function is wrapped: the raylet's lines go to the file, anything else is
    printed as before.
    """
    from ray._private import worker

    printing = getattr(worker.print_to_stdstream, "__wrapped__", worker.print_to_stdstream)

    def to_log(data: dict, ignore_prefix: bool) -> None:
        if data.get("pid") != "raylet":
            printing(data, ignore_prefix)
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                for line in data.get("lines", ()):
                    f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")
        except OSError:
            printing(data, ignore_prefix)  # no log to keep them in: as Ray would

    to_log.__wrapped__ = printing
    worker.print_to_stdstream = to_log
