"""The only allow-list: the table of seed-demanded differences in docs/decisions.md.

The differential tests explain a difference between Kafka and Cohort only by a row of that
table, so the list of what Cohort does differently is the one a reader of the decisions sees,
each row with the seed's own words. A row matches a ``Difference`` by the conversation's name
(a glob: ``* is fenced``, so that a difference that follows from a seed's rule is allowed only
where that rule acts), the API, the reply field's path (a glob: ``groups.*.error_code``) and
both values as the normaliser writes them (``*``: any); nothing else in the test knows of
any difference.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

DECISIONS = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"
HEADING = "## Differences from Apache Kafka 4.4 the seeds demand"
COLUMNS = ["case", "API", "field", "Kafka 4.4", "Cohort", "the seed's words"]


@dataclass(frozen=True)
class Allowed:
    case: str
    api: str
    field: str
    kafka: str
    cohort: str
    words: str

    def matches(self, case: str, difference) -> bool:
        return (fnmatch.fnmatchcase(case, self.case)
                and self.api in ("*", difference.api)
                and fnmatch.fnmatchcase(difference.path, self.field)
                and _value_matches(self.kafka, difference.kafka)
                and _value_matches(self.cohort, difference.cohort))

    def __str__(self) -> str:
        return (f"[{self.case}] {self.api} {self.field}: Kafka {self.kafka}, "
                f"Cohort {self.cohort}")


def _cell(text: str) -> str:
    return text.strip().strip("`").strip()


def _value_matches(cell: str, value: object) -> bool:
    return cell == "*" or cell == str(value)


def load(path: Path = DECISIONS) -> list[Allowed]:
    """The table's rows. Raises ``ValueError`` when the section or its table is missing or a
    row is malformed: an allow-list that cannot be read allows nothing silently."""
    text = path.read_text()
    start = text.find(HEADING)
    if start < 0:
        raise ValueError(f"{path}: no section {HEADING!r}")
    lines = text[start:].splitlines()[1:]
    rows = [line for line in _table(lines)]
    if not rows or [_cell(c) for c in _split(rows[0])] != COLUMNS:
        raise ValueError(f"{path}: the table under {HEADING!r} must have columns {COLUMNS}")
    out = []
    for line in rows[2:]:
        cells = [_cell(c) for c in _split(line)]
        if len(cells) != len(COLUMNS) or not all(cells):
            raise ValueError(f"{path}: malformed allow-list row {line!r}")
        out.append(Allowed(*cells))
    return out


def _table(lines: list[str]):
    """The first markdown table's lines after the heading (before the next heading)."""
    started = False
    for line in lines:
        if line.startswith("## "):
            return
        if line.startswith("|"):
            started = True
            yield line
        elif started:
            return


def _split(line: str) -> list[str]:
    # Cells are separated by | not inside backquotes (a glob may hold none, but a seed's words
    # may quote code with a pipe in it).
    cells, current, quoted = [], "", False
    for ch in line.strip()[1:-1]:
        if ch == "`":
            quoted = not quoted
        if ch == "|" and not quoted:
            cells.append(current)
            current = ""
        else:
            current += ch
    cells.append(current)
    return [re.sub(r"\s+", " ", c) for c in cells]
