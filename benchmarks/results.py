"""Machine-readable results of a benchmark run, and today's goals next to the previous run's.

``run_all`` prints Markdown; this module turns that report into a JSON file
under ``benchmarks/results/`` (commit, machine, every table with every row,
ratios included) so that two runs can be compared without re-reading prose.
A *goal row* is a table row carrying a verdict cell (✅ or ❌): its wanted
and measured values are the cells of that row, exactly as printed.

``python -m benchmarks.results`` prints the goal rows of the newest result
file next to the same rows of the file before it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
_VERDICTS = ("✅", "❌")


@dataclass(frozen=True, slots=True)
class ParsedTable:
    """One Markdown table of a report: its ``### title``, header and rows of cells."""

    title: str
    header: list[str]
    rows: list[list[str]]

    def as_json(self) -> dict[str, Any]:
        """The table as a JSON object."""
        return {"title": self.title, "header": self.header, "rows": self.rows}


def parse_tables(report: str) -> list[ParsedTable]:
    """Every ``### title`` followed by a pipe table in ``report``, in order."""
    tables: list[ParsedTable] = []
    title = ""
    lines = report.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if line.startswith("### "):
            title = line[4:].strip()
        elif line.startswith("|") and index + 1 < len(lines) and _is_rule(lines[index + 1]):
            header = _cells(line)
            rows: list[list[str]] = []
            index += 2
            while index < len(lines) and lines[index].strip().startswith("|"):
                rows.append(_cells(lines[index].strip()))
                index += 1
            tables.append(ParsedTable(title, header, rows))
            continue
        index += 1
    return tables


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") and set(stripped) <= set("|-: ")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def goal_rows(tables: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Rows that carry a verdict, keyed by ``table title / first cell[s]`` (stable across runs).

    A title or cell may carry a remark with a measured value, ``(what: value)``
    (the imports' memory, the slowest lookup); the key leaves such remarks out,
    so that the same goal row of two runs has the same key.
    """
    goals: dict[str, list[str]] = {}
    for table in tables:
        for row in table["rows"]:
            if any(cell in _VERDICTS for cell in row):
                key = " / ".join(_without_remarks(part) for part in [table["title"], *row[:2]])
                goals[key] = [str(cell) for cell in row]
    return goals


def _without_remarks(text: str) -> str:
    """``text`` without its parenthesised groups that hold a colon, spaces collapsed."""
    kept: list[str] = []
    start = opened = depth = 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                opened = index
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0 and ":" in text[opened:index]:
                kept.append(text[start:opened])
                start = index + 1
    kept.append(text[start:])
    return " ".join("".join(kept).split())


def write_result(report: str, machine: list[tuple[str, str]], seconds: float) -> Path:
    """Write one run's JSON file under ``benchmarks/results/``; returns its path."""
    RESULTS.mkdir(exist_ok=True)
    moment = datetime.now(UTC)
    commit = dict(machine).get("commit", "unknown").split(" ", 1)[0]
    path = RESULTS / f"{moment:%Y%m%dT%H%M%SZ}-{commit}.json"
    document = {
        "format": 1,
        "taken": moment.isoformat(timespec="seconds"),
        "commit": commit,
        "machine": dict(machine),
        "seconds": round(seconds, 1),
        "tables": [table.as_json() for table in parse_tables(report)],
    }
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def comparison(today: dict[str, Any], previous: dict[str, Any] | None) -> str:
    """A Markdown table: every goal row of ``today`` next to the same row of ``previous``."""
    now = goal_rows(today["tables"])
    before = goal_rows(previous["tables"]) if previous is not None else {}
    label = previous["commit"] if previous is not None else "none"
    lines = [
        f"| goal row | today ({today['commit']}) | previous ({label}) |",
        "|---|---|---|",
    ]
    for key, row in now.items():
        earlier = before.get(key)
        lines.append(
            f"| {key} | {' · '.join(row[2:])} | {' · '.join(earlier[2:]) if earlier else '—'} |"
        )
    return "\n".join(lines)


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    """Print the newest run's goal rows next to the run before it."""
    del argv
    files = sorted(RESULTS.glob("*.json"))
    if not files:
        print(f"no result files in {RESULTS}: run `make bench` first", file=sys.stderr)
        return 1
    previous = _load(files[-2]) if len(files) > 1 else None
    print(comparison(_load(files[-1]), previous))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
