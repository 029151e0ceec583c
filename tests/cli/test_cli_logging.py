"""``-v``/``-q`` on every command: how much of nenjim's log reaches stderr, and in what form."""

from __future__ import annotations

import argparse
import json
import logging
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.cli import main
from nenjim.cli.exit import one_line
from nenjim.cli.logs import OneLineFormatter, chosen_level
from nenjim.cli.run import build_parser

WIDGET = "com.example.widget"
SampleJournal = Any  # the ``sample`` fixture of conftest.py
Command = Callable[[SampleJournal, str, Path], list[str]]

COMMANDS: dict[str, Command] = {
    "journal verify": lambda sample, store, _: ["journal", "verify", str(sample.root)],
    "journal show": lambda sample, store, _: [
        "journal",
        "show",
        str(sample.root),
        WIDGET,
        "--store",
        store,
    ],
    "journal audit": lambda sample, store, _: ["journal", "audit", "--store", store],
    "log export": lambda sample, store, out: ["log", "export", "--store", store, "--out", str(out)],
}


Run = Callable[..., list[str]]


@pytest.fixture
def run(sample: SampleJournal, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run(name, options, before=False)``: the lines on stderr of command ``name`` with
    ``options`` after it (or ``before`` it), on an SQLite store holding the sample Journal."""
    store = f"sqlite://{tmp_path / 'log.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()

    def run_command(name: str, options: list[str], *, before: bool = False) -> list[str]:
        out = tmp_path / f"export-{len(list(tmp_path.iterdir()))}.log"
        arguments = COMMANDS[name](sample, store, out)
        assert main([*options, *arguments] if before else [*arguments, *options]) == 0
        return capsys.readouterr().err.splitlines()

    return run_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_by_default_and_with_q_no_info_is_shown(name: str, run: Run) -> None:
    assert run(name, []) == []
    assert run(name, ["-q"]) == []


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("before", [False, True], ids=["after", "before"])
def test_v_shows_what_the_command_did_one_line_each(name: str, before: bool, run: Run) -> None:
    lines = run(name, ["-v"], before=before)

    assert lines
    assert all(line.startswith("nenjim: info: ") for line in lines), lines
    assert any("log.db" in line or "journal" in line for line in lines), lines


@pytest.mark.parametrize("name", list(COMMANDS))
def test_with_json_every_log_line_is_a_json_object(name: str, run: Run) -> None:
    lines = run(name, ["--verbose", "--json"])

    logged = [json.loads(line) for line in lines]
    assert logged
    for record in logged:
        assert {"time", "level", "logger", "message"} <= set(record), record
        assert record["level"] == "info"
        assert record["logger"].startswith("nenjim.")
        assert record["time"].endswith("Z")


def test_the_root_loader_says_what_it_loaded(
    sample: SampleJournal, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "verify", str(sample.root), "-v"]) == 0
    loaded = f"nenjim: info: loaded the root {sample.root}: 3 revision files, 3 new; 3 revisions"
    assert f"{loaded} in the log" in capsys.readouterr().err.splitlines()


def test_a_failure_stays_one_line_with_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"

    assert main(["journal", "audit", "--store", f"sqlite://{missing}", "-vv"]) == 3

    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1, errors
    assert errors[0].startswith("nenjim: error: ")


def test_a_command_puts_the_nenjim_logger_back(
    sample: SampleJournal, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("nenjim")
    before = (logger.level, logger.propagate, list(logger.handlers))

    assert main(["journal", "verify", str(sample.root), "-vv", "--json"]) == 0

    assert (logger.level, logger.propagate, list(logger.handlers)) == before


@pytest.mark.parametrize(
    ("options", "level"),
    [
        ([], logging.WARNING),
        (["-q"], logging.ERROR),
        (["-qq"], logging.ERROR),
        (["-v"], logging.INFO),
        (["-vv"], logging.DEBUG),
        (["-vvv"], logging.DEBUG),
        (["-v", "-q"], logging.WARNING),
    ],
)
def test_the_level_each_count_of_v_and_q_chooses(options: list[str], level: int) -> None:
    args = build_parser().parse_args([*options, "journal", "digest", "FILE"])
    assert chosen_level(args) == level


def test_v_before_the_command_and_after_the_subcommand_add_up() -> None:
    args = build_parser().parse_args(["-v", "journal", "digest", "-v", "FILE"])
    assert chosen_level(args) == logging.DEBUG


def test_without_v_or_q_a_command_may_choose_its_own_level() -> None:
    args = build_parser().parse_args(["serve", "--key", "K"])
    assert chosen_level(args, default=logging.INFO) == logging.INFO
    args = build_parser().parse_args(["serve", "--key", "K", "-q"])
    assert chosen_level(args, default=logging.INFO) == logging.ERROR


def _leaves(parser: argparse.ArgumentParser, prefix: str = "nenjim") -> Iterator[tuple[str, Any]]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield prefix, parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from _leaves(sub, f"{prefix} {name}")


def test_every_command_takes_v_and_q() -> None:
    leaves = list(_leaves(build_parser()))
    assert len(leaves) > 20
    for name, parser in leaves:
        options = {option for action in parser._actions for option in action.option_strings}
        assert {"-v", "--verbose", "-q", "--quiet", "--json"} <= options, name


def test_a_json_log_line_carries_the_records_extra_fields() -> None:
    record = logging.LogRecord("nenjim.serve.access", logging.INFO, "", 0, "GET / 200", (), None)
    record.__dict__.update(method="GET", path="/", status=200, duration_ms=1.5)

    document = json.loads(OneLineFormatter(as_json=True).format(record))

    assert document["method"] == "GET"
    assert document["path"] == "/"
    assert document["status"] == 200
    assert document["duration_ms"] == 1.5
    assert document["logger"] == "nenjim.serve.access"
    assert document["message"] == "GET / 200"


def test_an_exception_in_a_record_is_one_line_without_traceback() -> None:
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        record = logging.LogRecord(
            "nenjim.x", logging.WARNING, "", 0, "failed", (), __import__("sys").exc_info()
        )

    line = OneLineFormatter().format(record)

    assert line == "nenjim: warning: failed: ValueError: bad\\nthing"


@given(st.text())
def test_a_line_shows_exactly_its_control_characters_escaped(text: str) -> None:
    shown = one_line(text)

    expected = "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) == "Cc"
        else char
        for char in text
    )
    assert shown == expected
    assert "\n" not in shown
    assert "\r" not in shown
