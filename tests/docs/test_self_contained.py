"""The project's docs, docstrings, comments and tests stand alone.

They may not send a reader to a file outside the repository, to a decision
record number or to a numbered section of notes the reader cannot open:
where a rule comes from the specification, the text states the rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
SCANNED = ["README.md", "docs", "domain", "infrastructure", "journal", "projections", "nenjim"]
SCANNED += ["examples", "benchmarks", "tests"]
CITATION = re.compile(
    r"ADR-?\d|§|notes §|storage-spi-notes|eventsourcing-notes|followers-notes|"
    r"transparency-notes|\.\./shared|/work/shared|shared/docs|journal-api\.md|"
    r"storage-api\.md|architecture\.md|\bseeds?/|\bthe (?:SPI |reference )?notes\b",
    re.IGNORECASE,
)


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = REPOSITORY / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        found += [p for p in candidates if p.suffix in (".py", ".md") and p.is_file()]
    # This file spells out the citations it looks for.
    return [p for p in found if p != Path(__file__).resolve()]


def test_the_scan_covers_the_packages_and_the_docs() -> None:
    names = {p.relative_to(REPOSITORY).parts[0] for p in _files()}
    assert set(SCANNED) <= names


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_citation_a_reader_cannot_open(path: Path) -> None:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = CITATION.search(line)
        assert match is None, f"{path.relative_to(REPOSITORY)}:{number}: {match.group()!r}: {line}"
