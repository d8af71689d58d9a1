"""What every ``cohort`` admin command shares around its logic: Ray's environment, the
connection, where results go and how a refusal ends the command.

Results (tables, JSON) go to the real stdout through ``print_result``; everything else a
command's process writes (Ray's log threads, Spark's JVM, warnings) goes to stderr, so that
``cohort ... --json | jq`` always reads one clean document. ``run_admin`` maps the ways a
command can end to exit codes: 0 done, 1 refused or failed (the message names the Kafka error,
or the command that fixes it), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO


class UsageError(Exception):
    """Arguments that do not make a command (exit code 2, as argparse's own errors)."""


_RESULTS: TextIO = sys.stdout


def print_result(*values: object) -> None:
    """A command's result, on the real stdout (``--json`` readers parse it whole)."""
    print(*values, file=_RESULTS, flush=True)


def run_admin(args: argparse.Namespace, command: Callable[[argparse.Namespace], int]) -> int:
    """Run one admin command with stdout kept for results; its refusals become exit codes."""
    from actors.tools.admin import AdminError, to_json
    from protocol.errors import CoordinatorError

    ray_environment()
    keep_stdout_for_results()
    try:
        return command(args)
    except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), _RESULTS.fileno())
        return 1
    except UsageError as e:
        print(f"cohort {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (AdminError, CoordinatorError) as e:
        name = e.error.name if e.error is not None else None
        message = e.message if isinstance(e, AdminError) else (e.message or name)
        if args.json:
            print_result(to_json({"error": name, "message": message}))
        print(f"{e.prefix}{e}" if isinstance(e, AdminError) else f"Error: {message} ({name})",
              file=sys.stderr)
        return 1
    except (ConnectionError, RuntimeError, TimeoutError) as e:
        if args.json:
            print_result(to_json({"error": type(e).__name__, "message": str(e)}))
        print(f"Error: {e}", file=sys.stderr)
        return 1


def keep_stdout_for_results() -> None:
    """Only results reach stdout: whatever else writes there while the command runs (Ray's
    log threads warning about worker processes, Spark's JVM) is sent to stderr instead."""
    global _RESULTS
    sys.stdout.flush()
    _RESULTS = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr


def ray_environment() -> None:
    """What Ray reads from the environment when it is imported, so set before any import.

    Ray 2.60 clusters want a token by default and a driver sends its token only in token mode,
    which ``ray.init`` sets for its own process but an operator's shell has not; a cluster
    without auth accepts a token-mode driver too.
    """
    os.environ.setdefault("RAY_LOGGER_LEVEL", "warning")  # no "Connecting to..." chatter
    has_token = (
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    )
    if has_token:
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def ray_unreachable(address: str | None, error: Exception) -> ConnectionError:
    """No Ray where the command looked: say where it looked and what starts one."""
    where = address or "RAY_ADDRESS / the local Ray"
    return ConnectionError(
        f"cannot connect to Ray at {where}: {error}; start Ray with `ray start --head` "
        "(or pass --address host:port / ray://head:10001)"
    )


def connect(args: argparse.Namespace):
    """The running Cohort at ``--address``; its absence is an error naming ``cohort start``."""
    from actors.cluster import Cluster

    try:
        return Cluster.connect(args.address)
    except (ConnectionError, ValueError) as e:
        raise ray_unreachable(args.address, e) from None


def emit(args: argparse.Namespace, columns, rows: list[dict], notes: Sequence[str] = ()) -> None:
    """Rows as JSON (``--json``) or as Kafka's tools print them: notes first, then the table."""
    from actors.tools.admin import display_rows, format_table, to_json

    if args.json:
        print_result(to_json(rows))
        return
    for note in notes:
        print_result(note)
    if rows or not notes:
        print_result(format_table(columns, display_rows(rows)))


def split(values: list[str] | None) -> list[str]:
    """``--type consumer,classic`` and ``--type consumer classic`` alike."""
    return [v for item in values or () for v in item.split(",") if v]
