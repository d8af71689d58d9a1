"""Apache Kafka itself, as the reference broker (DESIGN.md, "The reference broker").

Cohort's differential tests and benchmarks compare it against the real thing, so the real thing
must start anywhere in seconds without a Kafka distribution installed: this module runs the
pinned jars that ``scripts/setup.sh`` copies into ``${COHORT_CACHE:-~/.cache/cohort}/kafka-4.4.0``
(from ``java/pom.xml``) as a one-node KRaft cluster (broker and controller in one JVM) on free
loopback ports, with consumer, share and streams groups on. Pure subprocess code, no Ray: a
pytest fixture, a benchmark or a Ray actor can all own one.

    with ReferenceKafka() as kafka:
        print(kafka.bootstrap)
        rc, out, err = kafka.run_tool(CONSUMER_GROUPS, "--bootstrap-server", kafka.bootstrap,
                                      "--list")

The broker keeps everything (data, ``broker.log``) in its own work directory, removed by
``stop()``. It dies with ``stop()``, at interpreter exit, or by hand (``kill -9 -PID``: it is the
leader of its own process group); a process killed with SIGKILL leaves it running.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from protocol.wire.codec import _skip_tagged_fields
from protocol.wire.framing import frame
from protocol.wire.primitives import put_compact_string, put_legacy_string, put_uvarint, uvarint

KAFKA_VERSION = "4.4.0"  # java/pom.xml's kafka.version (tests/reference checks they agree)
SETUP_COMMAND = "bash scripts/setup.sh"

# The command-line tools, by the class each bin/kafka-*.sh script of the distribution runs.
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
GROUPS = "org.apache.kafka.tools.GroupsCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
STORAGE_TOOL = "kafka.tools.StorageTool"
BROKER_MAIN = "kafka.Kafka"

# The broker as it ships, in a heap this shared 2-core machine can spare. SerialGC: one core's
# worth of a small heap collects fastest without stealing the other core from the test.
BROKER_JVM_OPTIONS = ("-Xms512m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
# A tool runs for a second: the C1 compiler alone starts it fastest.
TOOL_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Djava.awt.headless=true")
# Feature levels set at format time. They are 4.4's defaults for a new cluster; named here so
# that share and streams groups are on because this file says so, not by a default's grace.
FEATURES_AT_FORMAT = {"share.version": 2, "streams.version": 1}
# A JVM that exits is seen at once; one that is slow is waited for: a loaded machine (every
# lane of scripts/test.sh starting its Ray and its JVMs at once) took over 60 s, logging as it
# went.
READY_TIMEOUT_S = 180.0
API_VERSIONS_KEY = 18


class ReferenceKafkaError(RuntimeError):
    """The reference broker could not be formatted, started or reached."""


class KafkaJarsMissing(ReferenceKafkaError):
    """The pinned jars are not in the cache: ``bash scripts/setup.sh`` fetches them."""


def kafka_cache_dir() -> Path:
    """Where ``scripts/setup.sh`` puts Kafka's jars (``lib/``) and the Java build (``build/``):
    ``${COHORT_CACHE:-~/.cache/cohort}/kafka-<version>``, outside the repository."""
    root = os.environ.get("COHORT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                         "cohort")
    return Path(root) / f"kafka-{KAFKA_VERSION}"


def kafka_classpath() -> str:
    """The JVM classpath of the pinned broker, tools and clients (and of the project's own Java
    classes when built); raises ``KafkaJarsMissing``, naming the fix, when they are not there."""
    cache = kafka_cache_dir()
    lib = cache / "lib"
    needed = [f"kafka_2.13-{KAFKA_VERSION}.jar", f"kafka-tools-{KAFKA_VERSION}.jar",
              f"kafka-clients-{KAFKA_VERSION}.jar"]
    missing = [name for name in needed if not (lib / name).is_file()]
    if missing:
        raise KafkaJarsMissing(
            f"Apache Kafka {KAFKA_VERSION}'s jars are not in {lib} (missing: "
            f"{', '.join(missing)}); run `{SETUP_COMMAND}` to fetch them (Maven, java/pom.xml)")
    parts = [str(lib / "*")]
    built = cache / "build"
    if built.is_dir() and any(built.glob("*.jar")):
        parts.insert(0, str(built / "*"))
    return os.pathsep.join(parts)


def java_binary() -> str:
    """``java`` from PATH (Java 17 or later), or a clear error."""
    found = shutil.which("java")
    if found is None:
        raise ReferenceKafkaError(f"no `java` on PATH: `{SETUP_COMMAND}` installs Java 17")
    return found


def random_cluster_id() -> str:
    """A cluster id as ``StorageTool random-uuid`` prints it (Kafka's ``Uuid.randomUuid``:
    16 random bytes, URL-safe base64 without padding, never starting with '-'), made here to
    spare a JVM start (~1 s of this machine's two cores)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports the kernel had free a moment ago (all bound at once,
    so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def api_versions(bootstrap: str, timeout_s: float = 5.0) -> dict[int, tuple[int, int]]:
    """Ask ``bootstrap`` for ApiVersions (v3, the version a modern client opens with): the
    broker's table ``{api_key: (min_version, max_version)}``. Raises ``OSError`` when nothing
    answers and ``ReferenceKafkaError`` when the answer is an error."""
    host, port = bootstrap.rsplit(":", 1)
    body = bytearray(struct.pack(">hhi", API_VERSIONS_KEY, 3, 1))
    put_legacy_string(body, "cohort-reference")  # header v2: client id, then no tags
    put_uvarint(body, 0)
    put_compact_string(body, "cohort")  # client_software_name
    put_compact_string(body, KAFKA_VERSION)  # client_software_version
    put_uvarint(body, 0)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(frame(bytes(body)))
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        data = _read_exactly(sock, size)
    # Response header v0 (ApiVersions answers with v0 whatever the request's header), then
    # error_code, then the compact array of (api_key, min, max, tagged fields).
    error_code = struct.unpack_from(">h", data, 4)[0]
    if error_code != 0:
        raise ReferenceKafkaError(f"ApiVersions from {bootstrap} answered error {error_code}")
    count, pos = uvarint(data, 6)
    table = {}
    for _ in range(count - 1):
        key, low, high = struct.unpack_from(">hhh", data, pos)
        pos = _skip_tagged_fields(data, pos + 6)
        table[key] = (low, high)
    return table


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def _properties(values: Mapping[str, object]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


class ReferenceKafka:
    """One Apache Kafka broker+controller (KRaft, one node) on loopback, in its own directory.

    ``config`` adds or overrides ``server.properties`` entries (say a shorter
    ``group.consumer.session.timeout.ms``); everything else is Kafka's default but what one
    node needs (replication factors of 1) and ``group.initial.rebalance.delay.ms=0``, which
    Kafka's own sample ``server.properties`` sets for development too. A ``work_dir`` given by
    the caller is kept by ``stop()``; the temporary one made otherwise is removed.
    """

    def __init__(self, work_dir: str | os.PathLike[str] | None = None, *,
                 config: Mapping[str, object] | None = None,
                 jvm_options: tuple[str, ...] = BROKER_JVM_OPTIONS,
                 ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self._given_dir = Path(work_dir) if work_dir is not None else None
        self._config = dict(config or {})
        self._jvm_options = tuple(jvm_options)
        self._ready_timeout_s = ready_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None
        self.start_seconds: float | None = None  # format + JVM start until ApiVersions answers

    # ------------------------------------------------------------------------ lifecycle

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` for a client: ``127.0.0.1:PORT``."""
        if self._port is None:
            raise ReferenceKafkaError("the reference broker is not started: call start()")
        return f"127.0.0.1:{self._port}"

    @property
    def work_dir(self) -> Path:
        """The broker's directory: ``server.properties``, ``data/``, ``broker.log``."""
        if self._dir is None:
            raise ReferenceKafkaError("the reference broker is not started: call start()")
        return self._dir

    @property
    def pid(self) -> int | None:
        """The broker JVM's pid (also its process group), while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> ReferenceKafka:
        """Format the storage and start the broker; return once ApiVersions answers on its
        port, or raise ``ReferenceKafkaError`` with the broker log's tail."""
        if self._process is not None:
            return self
        began = time.monotonic()
        classpath = kafka_classpath()
        java = java_binary()
        if self._given_dir is not None:
            self._given_dir.mkdir(parents=True, exist_ok=True)
            self._dir = self._given_dir
        else:
            self._dir = Path(tempfile.mkdtemp(prefix="reference-kafka-"))
        self._port, self.controller_port = free_ports(2)
        self.cluster_id = random_cluster_id()
        self._write_configs()
        try:
            self._format(java, classpath)
            self._launch(java, classpath)
            atexit.register(self.stop)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Kill the broker (its whole process group, at once: its data is thrown away) and
        remove the directory this object made. Safe to call twice."""
        atexit.unregister(self.stop)
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if self._dir is not None and self._given_dir is None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        self._port = None

    def __enter__(self) -> ReferenceKafka:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------------ tools

    def run_tool(self, main_class: str, *args: str,
                 timeout: float = 60.0) -> tuple[int, str, str]:
        """Run one of Kafka's command-line tools by its class (``CONSUMER_GROUPS``,
        ``SHARE_GROUPS``, ``STREAMS_GROUPS``, ``CONFIGS``, ...; the bin/*.sh scripts are only
        wrappers around them): ``(returncode, stdout, stderr)``. The arguments are the
        script's, ``--bootstrap-server`` included (``self.bootstrap``). Raises
        ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        log4j = self._tools_log4j()
        command = [java_binary(), *TOOL_JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}",
                   "-cp", kafka_classpath(), main_class, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
        return done.returncode, done.stdout, done.stderr

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the broker's log and console output, for an error
        message."""
        if self._dir is None:
            return "(no work directory)"
        out = []
        for name in ("broker.log", "console.log"):
            path = self._dir / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out) or f"(nothing logged in {self._dir})"

    # ------------------------------------------------------------------------ internals

    def _server_properties(self) -> dict[str, object]:
        assert self._dir is not None
        broker, controller = self._port, self.controller_port
        return {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": self._dir / "data",
            "num.partitions": 1,
            # One node: every internal topic's replication factor and min ISR is 1.
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            # The one node is its own controller, yet on a loaded machine (a CI run's five lanes
            # on two cores saw controller events of 3-5 s) the controller fenced the broker for a
            # late heartbeat, which unloads every group coordinator (clients then read
            # NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS), and a starting broker's
            # registration timed out (it waits half the session) until the start gave up.
            "broker.session.timeout.ms": 120_000,
            # Streams groups' bounds only, not their defaults: a test may then set a group's
            # streams.session.timeout.ms and streams.heartbeat.interval.ms (group configs) low
            # enough to see a killed instance's tasks move within its patience (the shipped
            # minimums are 45 s and 5 s).
            "group.streams.min.session.timeout.ms": 1000,
            "group.streams.min.heartbeat.interval.ms": 100,
            **self._config,
        }

    def _write_configs(self) -> None:
        assert self._dir is not None
        (self._dir / "server.properties").write_text(_properties(self._server_properties()))
        # The broker logs INFO into its own file (the tail a failed start shows), nothing to
        # the console; the per-setting dump of every config object stays out.
        (self._dir / "log4j2.properties").write_text(_properties({
            "status": "warn",
            "appender.file.type": "File",
            "appender.file.name": "file",
            "appender.file.fileName": self._dir / "broker.log",
            "appender.file.layout.type": "PatternLayout",
            "appender.file.layout.pattern": "[%d] %p %m (%c)%n",
            "rootLogger.level": "INFO",
            "rootLogger.appenderRef.file.ref": "file",
            "logger.config.name": "org.apache.kafka.common.config.AbstractConfig",
            "logger.config.level": "WARN",
        }))

    def _tools_log4j(self) -> Path:
        """A log4j2 config for the tools: warnings to stderr, as Kafka's tools-log4j2 does."""
        directory = self._dir or Path(tempfile.gettempdir())
        path = directory / "tools-log4j2.properties"
        if not path.exists():
            path.write_text(_properties({
                "status": "warn",
                "appender.err.type": "Console",
                "appender.err.name": "err",
                "appender.err.target": "SYSTEM_ERR",
                "appender.err.layout.type": "PatternLayout",
                "appender.err.layout.pattern": "[%d] %p %m (%c)%n",
                "rootLogger.level": "WARN",
                "rootLogger.appenderRef.err.ref": "err",
            }))
        return path

    def _format(self, java: str, classpath: str) -> None:
        assert self._dir is not None and self.cluster_id is not None
        features = [arg for name, level in FEATURES_AT_FORMAT.items()
                    for arg in ("--feature", f"{name}={level}")]
        command = [java, *TOOL_JVM_OPTIONS, f"-Dlog4j2.configurationFile={self._tools_log4j()}",
                   "-cp", classpath, STORAGE_TOOL, "format", "--standalone",
                   "-t", self.cluster_id, "-c", str(self._dir / "server.properties"), *features]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  stdin=subprocess.DEVNULL, timeout=self._ready_timeout_s)
        except subprocess.TimeoutExpired as e:
            raise ReferenceKafkaError(
                f"formatting the reference broker's storage took over {e.timeout:.0f} s: "
                f"{' '.join(command)}") from e
        if done.returncode != 0:
            raise ReferenceKafkaError(
                f"formatting the reference broker's storage failed (exit {done.returncode}): "
                f"{' '.join(command)}\n{done.stdout}{done.stderr}")

    def _launch(self, java: str, classpath: str) -> None:
        assert self._dir is not None
        console = open(self._dir / "console.log", "wb")  # noqa: SIM115 - the child keeps it
        try:
            self._process = subprocess.Popen(
                [java, *self._jvm_options,
                 f"-Dlog4j2.configurationFile={self._dir / 'log4j2.properties'}",
                 "-cp", classpath, BROKER_MAIN, str(self._dir / "server.properties")],
                stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                cwd=self._dir, start_new_session=True)
        finally:
            console.close()

    def _wait_ready(self) -> None:
        """Poll ApiVersions on the broker's port until it answers (the listener only accepts
        once the broker has caught up with the metadata log and registered), the JVM exits,
        or the deadline passes."""
        assert self._process is not None
        deadline = time.monotonic() + self._ready_timeout_s
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise ReferenceKafkaError(
                    f"the reference broker exited with code {code} while starting\n"
                    f"{self.log_tail()}")
            try:
                api_versions(self.bootstrap, timeout_s=2.0)
                return
            except (OSError, ReferenceKafkaError) as e:
                last_error = e
            time.sleep(0.1)
        raise ReferenceKafkaError(
            f"the reference broker did not answer ApiVersions on {self.bootstrap} within "
            f"{self._ready_timeout_s:.0f} s (last: {last_error!r})\n{self.log_tail()}")
