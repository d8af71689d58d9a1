"""What every ``cohort`` admin command shares: the refusal, the rows, and how they are printed.

The admin side of Cohort does what ``kafka-consumer-groups.sh`` and ``kafka-configs.sh`` do, one
module per command family: ``admin_groups`` (list, describe, delete, regex check),
``admin_offsets`` (reset committed offsets), ``admin_configs`` (dynamic group configs),
``admin_timelines`` (the files and history ``cohort timeline`` draws). Each function takes a
``Cluster`` (or plain data), asks the coordinator through the same requests Kafka's admin
client sends and returns rows: plain dicts with snake_case keys, one per line of the table
Kafka's tool would print. This module is what they have in common, so that every command
refuses the same way (``AdminError`` carrying the Kafka error name, raised before anything is
changed) and prints the same way (``format_table``, ``to_json``, states spelled as Kafka
spells them); ``actors/tools/cli.py`` only parses arguments and prints.

Cohort keeps no log, only committed offsets: LOG-END-OFFSET and LAG are ``None`` ("-").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from protocol.errors import Errors
from protocol.group_states import kafka_state_name

Row = dict[str, Any]
Columns = Sequence[tuple[str, str]]  # (HEADER, row key)

# The columns of ``cohort export``'s summary (the export itself is ``actors.tools.export``).
EXPORT_COLUMNS: Columns = [("TABLE", "table"), ("ROWS", "rows"), ("PATH", "path")]


class AdminError(Exception):
    """A refusal, said the way the CLI prints it; ``error`` is the Kafka error, if there is one."""

    def __init__(self, message: str, error: Errors | None = None, prefix: str = "Error: ") -> None:
        super().__init__(message)
        self.message = message
        self.error = error
        self.prefix = prefix  # how the CLI introduces it (kafka-topics.sh has its own words)

    def __str__(self) -> str:
        return f"{self.message} ({self.error.name})" if self.error is not None else self.message


def missing_group(group_id: str) -> AdminError:
    return AdminError(f"Consumer group '{group_id}' does not exist.", Errors.GROUP_ID_NOT_FOUND)


def raise_for(error_code: int, message: str | None, what: str) -> None:
    """Raise ``AdminError`` for a reply's error code (``what`` failed: why); nothing if NONE."""
    if error_code != Errors.NONE:
        error = kafka_error(error_code)
        raise AdminError(f"{what}: {message or error.name}", error)


def kafka_error(code: int) -> Errors:
    """The ``Errors`` member of a reply's code; a code Cohort does not know is a server error."""
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


# --------------------------------------------------------------------------- tables


def format_table(columns: Columns, rows: Iterable[Row]) -> str:
    """An aligned text table, as Kafka's tools print them: ``None`` and ``""`` show as ``-``."""
    cells = [[h for h, _ in columns]]
    cells += [["-" if r.get(k) in (None, "") else str(r.get(k)) for _, k in columns]
              for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join(
        " ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def to_json(rows: object) -> str:
    return json.dumps(rows, indent=2, sort_keys=False, default=str)


def display_rows(rows: list[Row]) -> list[Row]:
    """Rows for a human: states spelled as Kafka spells them."""
    return [dict(r, state=kafka_state_name(r["state"])) if "state" in r else r for r in rows]
