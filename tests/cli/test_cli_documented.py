"""What README.md says of the command line is what ``nenjim --help`` and pyproject.toml say."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from nenjim.cli import main
from nenjim.cli.exit import KINDS

PROJECT = Path(__file__).resolve().parents[2]
README = (PROJECT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table under the header line starting with ``header``."""
    lines = text[text.index(header) :].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_the_exit_codes_are_those_of_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    help_text = capsys.readouterr().out
    listed = help_text[help_text.index("exit codes:") :].split("\n\n")[0]
    in_help = [int(code) for code in re.findall(r"^  (\d+) ", listed, re.MULTILINE)]
    rows = _table_rows(_section("The command line"), "| code | meaning |")
    assert [int(row[0]) for row in rows] == in_help
    flat_help = " ".join(listed.split())
    for row in rows:
        # Each meaning, as the README words it, is the help's (less the Markdown).
        meaning = row[1].replace("`", "").replace("\\|", "|")
        first_words = " ".join(meaning.split()[:4])
        assert first_words in flat_help, (row[0], first_words)


def test_the_json_kinds_are_every_kind_the_help_names(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _table_rows(_section("The command line"), "| KIND | exit | what |")
    assert [row[0].strip("`") for row in rows] == list(KINDS)
    assert main(["--help"]) == 0
    flat_help = " ".join(capsys.readouterr().out.split())
    for kind in KINDS:
        assert re.search(rf"\b{kind}\b", flat_help[flat_help.index("where KIND is") :]), kind


def test_the_install_section_names_every_extra_and_no_package_index_install() -> None:
    extras = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    installing = _section("Installing")
    for extra in extras:
        assert re.search(rf"\[([a-z,]*,)?{extra}(,[a-z,]*)?\]'", installing), extra
    for line in installing.splitlines():
        if line.startswith("pip install"):
            target = next(a for a in line.split()[2:] if not a.startswith("-")).strip("'")
            assert target.startswith((".", "dist/")), line  # a checkout or a built wheel
