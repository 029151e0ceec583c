"""The project's docs, docstrings, comments and tests stand alone.

They may not send a reader to a file outside the repository, to a decision
record number or to a numbered section of material the reader cannot open:
where a rule comes from the specification, the text states the rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
SCANNED = ["README.md", "docs", "domain", "infrastructure", "journal", "projections", "nenjim"]
SCANNED += ["examples", "benchmarks", "tests"]
# Each citation is spelled with a character class or an escape, so that this file, which
# is scanned too, holds none of them.
CITATION = re.compile(
    r"A[D]R-?\d|\u00a7|storage-spi-not[e]s|eventsourcing-not[e]s|followers-not[e]s|"
    r"transparency-not[e]s|\.\./shar[e]d|/work/shar[e]d|shar[e]d/docs|journal-api\.md|"
    r"storage-api\.md|architecture\.md|\bseeds?/|\bthe (?:SPI |reference )?not[e]s\b",
    re.IGNORECASE,
)


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = REPOSITORY / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        found += [p for p in candidates if p.suffix in (".py", ".md") and p.is_file()]
    return found


def test_the_scan_covers_the_packages_and_the_docs() -> None:
    names = {p.relative_to(REPOSITORY).parts[0] for p in _files()}
    assert set(SCANNED) <= names


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_citation_a_reader_cannot_open(path: Path) -> None:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = CITATION.search(line)
        assert match is None, f"{path.relative_to(REPOSITORY)}:{number}: {match.group()!r}: {line}"


@pytest.mark.parametrize(
    "cited",
    # Built from parts, so that this file holds no citation itself.
    [
        "AD" + "R-12",
        "\u00a7" + " 4.2",
        "../" + "shared/x",
        "storage-spi-" + "notes.md",
        "see the " + "notes",
    ],
)
def test_the_pattern_finds_each_kind_of_citation(cited: str) -> None:
    assert CITATION.search(f"as {cited} says")
