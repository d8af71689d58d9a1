"""Running the real ``cohort`` command from a test, as an operator's shell runs it.

Each ``cohort`` child is a Ray driver of its own: it gets the cluster's GCS address with
``--address`` and this process's environment without ``RAY_ADDRESS`` and without the
``RAY_AUTH_MODE=token`` that ``ray.init`` set here, as an operator's shell has it: the command
has to find the token (``~/.ray/auth_token``) and switch to token mode itself. A child costs a
Ray connect (seconds), so independent commands run at once (``cohort_parallel``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COHORT = str(Path(sys.executable).with_name("cohort"))
PARALLEL_CLIS = 3
CHILD_TIMEOUT_S = 120.0


def env() -> dict[str, str]:
    """This process's environment as an operator's shell has it (no Ray driver settings)."""
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}


def _argv(args: list[str], address: str | None) -> list[str]:
    return [COHORT, *args, *(["--address", address] if address else [])]


def cohort(*args: str, address: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_argv(list(args), address), capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, env=env())


def cohort_parallel(commands: dict[str, list[str]], address: str) -> dict:
    """Run independent commands, at most ``PARALLEL_CLIS`` at a time; name -> CompletedProcess.

    Each command is a Python process importing Ray and connecting as a driver (a CPU-second
    or two); started all at once on two cores they starved the session's client actors past
    their 4 s sessions, and the groups under test rebalanced while being described."""
    out: dict[str, subprocess.CompletedProcess] = {}
    running: dict[str, subprocess.Popen] = {}
    waiting = list(commands.items())
    while waiting or running:
        while waiting and len(running) < PARALLEL_CLIS:
            name, args = waiting.pop(0)
            running[name] = subprocess.Popen(_argv(args, address), stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True, env=env())
        name, p = next(iter(running.items()))
        stdout, stderr = p.communicate(timeout=CHILD_TIMEOUT_S)
        del running[name]
        out[name] = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    return {name: out[name] for name in commands}


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


def refused(done: subprocess.CompletedProcess, error_name: str) -> str:
    assert done.returncode == 1, f"{done.args}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert error_name in done.stderr, done.stderr
    return done.stderr


def table(stdout: str) -> list[list[str]]:
    """The lines of an aligned table, split into cells (cells never contain spaces here)."""
    return [line.split() for line in stdout.splitlines() if line.strip()]
