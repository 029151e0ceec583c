"""A tiny plain-text table formatter for the human output of ``nenjim``."""

from __future__ import annotations

from collections.abc import Sequence

COLUMN_GAP = "  "


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """``rows`` (and an optional ``header``) as left-aligned columns, one line each.

    Columns are separated by two spaces; trailing blanks are trimmed. Tabs and
    line breaks inside a cell are shown escaped so one row stays one line.
    """
    table = [[_cell(value) for value in row] for row in [*([header] if header else []), *rows]]
    widths: list[int] = []
    for row in table:
        for i, value in enumerate(row):
            if i == len(widths):
                widths.append(0)
            widths[i] = max(widths[i], len(value))
    return "\n".join(
        COLUMN_GAP.join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip()
        for row in table
    )


def _cell(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n")
    )
