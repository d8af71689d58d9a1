"""Kafka's own Java clients and tools, driven from Python (issue 29).

The Java side is ``java/src/main/java/io/cohort/javaclients`` (``Driver``), built by
``scripts/setup.sh`` with the reference broker's jars, into the same cache. A JVM start costs
about a second of this 2-core machine, so one ``JavaClients`` is one JVM that runs many
commands at once, each with an id, and reports JSON lines per command:

    with JavaClients() as java:
        group = java.consume(bootstrap, "orders", "g1", protocol="consumer", instances=3)
        group.wait(lambda events: ...)              # every wait has a deadline
        group.stop()                                # the consumers commit, leave and close
        rc, out, err = java.tool(CONSUMER_GROUPS, "--bootstrap-server", bootstrap, "--list")

``tool`` runs one of Kafka's command-line tools by its main class from the kafka-tools jar, as
``ReferenceKafka.run_tool`` does, but in this JVM (its stdout, stderr and ``Exit.exit`` code
captured): the same tool, a JVM start cheaper.

Pure subprocess code, no Ray. The JVM dies with ``stop()`` or at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from actors.tools.reference_kafka import (
    SETUP_COMMAND,
    KafkaJarsMissing,
    ReferenceKafkaError,
    java_binary,
    kafka_cache_dir,
    kafka_classpath,
)

DRIVER_MAIN = "io.cohort.javaclients.Driver"
DRIVER_JAR = "cohort-reference-kafka-0.1.0.jar"  # java/pom.xml's artifactId-version
JAVA_HASH = Path(__file__).resolve().parents[2] / "scripts" / "java_hash.sh"
# Consumers run for a while, tools for a moment: C1 alone starts fastest and is quick enough
# for a few thousand records a second.
DRIVER_JVM_OPTIONS = ("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                      "-Djava.awt.headless=true")
COMMAND_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0

Event = dict[str, Any]


def driver_classpath() -> str:
    """``kafka_classpath()``, which holds the driver's jar once built; raises
    ``KafkaJarsMissing`` (naming the fix) when the jar is not built, or was built from other
    Java sources than the repository's (``scripts/java_hash.sh``, the hash
    ``scripts/setup.sh`` builds by)."""
    cache = kafka_cache_dir()
    jar = cache / "build" / DRIVER_JAR
    if not jar.is_file():
        raise KafkaJarsMissing(f"the Java driver ({jar}) is not built: run `{SETUP_COMMAND}`")
    if JAVA_HASH.is_file():
        built = (cache / ".stamp").read_text().strip() if (cache / ".stamp").is_file() else ""
        now = subprocess.run(["bash", str(JAVA_HASH)], capture_output=True, text=True,
                             check=True).stdout.strip()
        if built != now:
            raise KafkaJarsMissing(f"the Java driver ({jar}) was built from other sources "
                                   f"than java/ holds now: run `{SETUP_COMMAND}`")
    return kafka_classpath()


class Command:
    """One command running in the driver's JVM: its events as they arrive (``events()``),
    a wait on them with a deadline, and ``stop()`` for consumers."""

    def __init__(self, clients: JavaClients, command_id: str) -> None:
        self.id = command_id
        self._clients = clients
        self._events: list[Event] = []
        self._changed = threading.Condition()
        self._listeners: list[Callable[[Event], None]] = []

    def listen(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener(event)`` for every event from now on, as it arrives (on the reader
        thread: keep it short). A benchmark timing events uses this rather than rescanning
        ``events()``."""
        with self._changed:
            self._listeners.append(listener)

    def _add(self, event: Event) -> None:
        with self._changed:
            self._events.append(event)
            listeners = list(self._listeners)
            self._changed.notify_all()
        for listener in listeners:
            listener(event)

    def events(self, kind: str | None = None) -> list[Event]:
        """A snapshot of the events so far (only those of ``kind`` when given)."""
        with self._changed:
            return [e for e in self._events if kind is None or e["event"] == kind]

    @property
    def ended(self) -> Event | None:
        """The command's last event (``{"event": "end", "ok": ...}``), once it ended."""
        found = self.events("end")
        return found[0] if found else None

    def wait(self, predicate: Callable[[list[Event]], Any],
             timeout_s: float = COMMAND_TIMEOUT_S) -> Any:
        """Wait until ``predicate(events)`` is truthy (and return it); raise ``TimeoutError``
        with the last events and the JVM's stderr tail after ``timeout_s``, or
        ``ReferenceKafkaError`` if the command ends first without satisfying it."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                value = predicate(list(self._events))
                if value:
                    return value
                if any(e["event"] == "end" for e in self._events):
                    raise ReferenceKafkaError(
                        f"command {self.id} ended before the condition held: "
                        f"{_brief(self._events[-5:])}\n{self._clients.stderr_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"command {self.id}: condition not reached in {timeout_s:.0f} s; "
                        f"last events {_brief(self._events[-5:])}\n"
                        f"{self._clients.stderr_tail()}")
                self._changed.wait(min(left, 0.5))

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> Event:
        """Ask a consume or share command to end (its consumers close: commit, leave) and wait
        for its end."""
        self._clients._send("stop", self.id)
        return self.join(timeout_s)

    def join(self, timeout_s: float = COMMAND_TIMEOUT_S) -> Event:
        """Wait for the command's end event; raise if it did not end well."""
        self.wait(lambda events: any(e["event"] == "end" for e in events), timeout_s)
        end = self.ended
        assert end is not None
        if not end["ok"]:
            raise ReferenceKafkaError(f"command {self.id} failed: {end.get('error')}\n"
                                      f"{self._clients.stderr_tail()}")
        return end


class JavaClients:
    """One JVM running ``Driver serve`` (see the module docstring)."""

    def __init__(self, jvm_options: tuple[str, ...] = DRIVER_JVM_OPTIONS,
                 log_level: str = "WARN", loggers: dict[str, str] | None = None) -> None:
        self._jvm_options = tuple(jvm_options)
        self._log_level = log_level  # the clients' log4j level (their log: stderr_tail)
        # Finer levels for some loggers (class or package -> level), to trace one part of a
        # client (a heartbeat manager's requests and replies) without the rest's noise.
        self._loggers = dict(loggers or {})
        self._process: subprocess.Popen[str] | None = None
        self._dir: Path | None = None
        self._commands: dict[str, Command] = {}
        self._ids = itertools.count()
        self._write_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self.noise: list[str] = []  # stdout lines that were not the driver's JSON

    # ------------------------------------------------------------------------ lifecycle

    def start(self) -> JavaClients:
        if self._process is not None:
            return self
        classpath = driver_classpath()
        self._dir = Path(tempfile.mkdtemp(prefix="java-clients-"))
        log4j = self._dir / "log4j2.properties"
        # Clients' log to stderr (a file): stdout is the driver's JSON alone.
        log4j.write_text("".join(f"{k}={v}\n" for k, v in {
            "status": "warn",
            "appender.err.type": "Console",
            "appender.err.name": "err",
            "appender.err.target": "SYSTEM_ERR",
            "appender.err.layout.type": "PatternLayout",
            "appender.err.layout.pattern": "[%d] %p %m (%c)%n",
            "rootLogger.level": self._log_level,
            "rootLogger.appenderRef.err.ref": "err",
            **{f"logger.l{i}.{k}": v for i, (name, level) in enumerate(self._loggers.items())
               for k, v in (("name", name), ("level", level))},
        }.items()))
        stderr = open(self._dir / "stderr.log", "w")  # noqa: SIM115 - the child keeps it
        try:
            self._process = subprocess.Popen(
                [java_binary(), *self._jvm_options, f"-Dlog4j2.configurationFile={log4j}",
                 "-cp", classpath, DRIVER_MAIN, "serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                bufsize=1, start_new_session=True)
        finally:
            stderr.close()
        atexit.register(self.stop)
        self._reader = threading.Thread(target=self._read, name="java-clients-reader",
                                        daemon=True)
        self._reader.start()
        return self

    def stop(self) -> None:
        """Close the driver's stdin (it stops what runs, politely), then kill it if it lingers.
        Safe to call twice."""
        atexit.unregister(self.stop)
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    @property
    def pid(self) -> int | None:
        """The JVM's pid (also its process group), while it runs."""
        return self._process.pid if self._process is not None else None

    def kill(self) -> None:
        """SIGKILL the JVM at once, as a crash would: no client closes, nothing is committed
        or left. What still waits on a command ends, failed."""
        atexit.unregister(self.stop)
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def __enter__(self) -> JavaClients:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def stderr_path(self) -> Path | None:
        """The JVM's stderr (its clients' log), once started."""
        return self._dir / "stderr.log" if self._dir is not None else None

    def stderr_tail(self, lines: int = 30) -> str:
        """The last lines the JVM wrote to stderr (clients' warnings), for an error message."""
        if self._dir is None:
            return ""
        path = self._dir / "stderr.log"
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
        return f"--- {path} (last {len(text)} lines)\n" + "\n".join(text)

    # ------------------------------------------------------------------------ commands

    def command(self, verb: str, *tokens: str, prefix: str | None = None) -> Command:
        """Start ``verb`` with its tokens (see ``Driver``'s javadoc); its ``Command``."""
        command = Command(self, f"{prefix or verb}-{next(self._ids)}")
        self._commands[command.id] = command
        self._send(verb, command.id, *tokens)
        return command

    def consume(self, bootstrap: str, topic: str, group: str, *, protocol: str = "consumer",
                instances: int = 1, records: int | None = None, stop_at: int | None = None,
                together: bool = False, config: dict[str, object] | None = None,
                listener: Callable[[Event], None] | None = None) -> Command:
        """``instances`` KafkaConsumers of ``group`` (``GroupConsumers``), running until
        ``stop()`` (or ``records`` records read); events ``assignment``, ``records``,
        ``committed``, ``closed``, ..., each with its ``instance``. ``together``: every
        consumer is built before any subscribes (event ``subscribing`` then). ``listener``
        sees every event, the first included (``Command.listen``)."""
        return self._start("consume", listener, *_options(
            bootstrap=bootstrap, topic=topic, group=group, protocol=protocol,
            instances=instances, records=records, stop_at=stop_at,
            together="true" if together else None), *_configs(config))

    def share(self, bootstrap: str, topic: str, group: str, *, instances: int = 1,
              records: int | None = None, config: dict[str, object] | None = None,
              listener: Callable[[Event], None] | None = None) -> Command:
        """``instances`` KafkaShareConsumers of ``group`` (``ShareConsumers``), accepting every
        record; events ``records``, ``acknowledged``, ``closed``, ..."""
        return self._start("share", listener, *_options(
            bootstrap=bootstrap, topic=topic, group=group, instances=instances,
            records=records), *_configs(config))

    def _start(self, verb: str, listener: Callable[[Event], None] | None,
               *tokens: str) -> Command:
        """``command``, with ``listener`` attached before the JVM is asked (so it misses
        nothing)."""
        command = Command(self, f"{verb}-{next(self._ids)}")
        if listener is not None:
            command.listen(listener)
        self._commands[command.id] = command
        self._send(verb, command.id, *tokens)
        return command

    def streams(self, bootstrap: str, app: str, input_topic: str, output_topic: str,
                state_dir: str, *, instances: int = 1, first: int = 0,
                config: dict[str, object] | None = None) -> Command:
        """``instances`` KafkaStreams clients of the word-count app ``app`` in a streams group
        (``StreamsApp``, numbered from ``first``), running until ``stop()``; events ``state``,
        ``tasks``, ``error``, ``closed``, each with its ``instance`` and ``ms``."""
        return self.command("streams", *_options(
            bootstrap=bootstrap, app=app, input=input_topic, output=output_topic,
            state_dir=state_dir, instances=instances, first=first), *_configs(config))

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        """Create a topic with Kafka's Admin client."""
        self.command("topic", *_options(bootstrap=bootstrap, topic=topic,
                                        partitions=partitions)).join()

    def produce(self, bootstrap: str, topic: str, partitions: int, records: int,
                start: int = 0) -> None:
        """``records`` records to each partition, record n's value "start + n" (its offset
        when the partitions held ``start`` records each)."""
        self.command("produce", *_options(bootstrap=bootstrap, topic=topic,
                                          partitions=partitions, records=records,
                                          start=start)).join()

    def tool(self, main_class: str, *args: str,
             timeout: float = COMMAND_TIMEOUT_S) -> tuple[int, str, str]:
        """Run one of Kafka's command-line tools by its class, in this JVM:
        ``(exit code, stdout, stderr)``, as ``ReferenceKafka.run_tool`` returns them."""
        command = self.command("tool", main_class, *args)
        command.join(timeout)
        result = command.events("tool")[0]
        return result["exit"], result["stdout"], result["stderr"]

    # ------------------------------------------------------------------------ internals

    def _send(self, *tokens: str) -> None:
        if self._process is None:
            raise ReferenceKafkaError("the Java driver is not started: call start()")
        for token in tokens:
            if "\t" in token or "\n" in token:
                raise ValueError(f"a driver token may hold no tab or newline: {token!r}")
        with self._write_lock:
            self._process.stdin.write("\t".join(tokens) + "\n")
            self._process.stdin.flush()

    def _read(self) -> None:
        process = self._process
        assert process is not None
        for line in process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                self.noise.append(line.rstrip("\n"))
                continue
            command = self._commands.get(event.get("id"))
            if command is not None:
                command._add(event)
        # The JVM is gone: whatever still waits ends, failed.
        for command in self._commands.values():
            if command.ended is None:
                command._add({"id": command.id, "event": "end", "ok": False,
                              "error": "the Java driver exited"})


def _brief(events: list[Event], chars: int = 300) -> str:
    """Events for an error message, each cut to ``chars`` (a share consumer's carry hundreds
    of offsets)."""
    return "\n".join(text if len(text := json.dumps(e)) <= chars else text[:chars] + "...}"
                     for e in events)


def _options(**values: object) -> list[str]:
    return [f"{key}={value}" for key, value in values.items() if value is not None]


def _configs(config: dict[str, object] | None) -> list[str]:
    return [f"config.{key}={value}" for key, value in (config or {}).items()]
