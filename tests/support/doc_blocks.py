"""Fenced code blocks of the project's Markdown documents, in document order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[A-Za-z0-9_-]*)[ \t]*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string, first line (1-based) and text, dedented."""

    document: Path
    info: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPOSITORY)}:{self.line}"


def blocks(document: Path) -> list[Block]:
    """Every fenced block of ``document`` (read with universal newlines)."""
    found: list[Block] = []
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None or not opening["info"]:
            continue
        indent, start = opening["indent"], index
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != f"{indent}```":
            body.append(lines[index].removeprefix(indent))
            index += 1
        if index == len(lines):
            raise AssertionError(f"{document}: unclosed ``` block from line {start}")
        found.append(Block(document, opening["info"], start, "\n".join(body) + "\n"))
        index += 1
    return found
