"""``benchmarks.probes.parse_handoff``: parsed revisions pickled and unpickled against the parse."""

from __future__ import annotations

import pytest

from benchmarks.common import chain_texts
from benchmarks.probes import parse_handoff


def _files(count: int) -> list[bytes]:
    return [text.encode() for text in chain_texts("org.example.handoff", count)]


def test_every_cost_is_measured_per_revision_and_the_revisions_survive_the_trip() -> None:
    figures = parse_handoff.measure(_files(6), per_batch=3, runs=1)
    assert set(figures) == {"parse", "dumps", "loads", "bytes", "text"}
    assert all(value > 0 for value in figures.values())
    assert figures["text"] == sum(map(len, _files(6))) / 6


def test_the_report_compares_each_step_with_the_parse() -> None:
    figures = {"parse": 50e-6, "dumps": 10e-6, "loads": 60e-6, "bytes": 1400.0, "text": 900.0}
    report = parse_handoff.report(figures, 10)
    rows = {
        cells[0]: cells[1:]
        for line in report.splitlines()
        if line.startswith("| ") and (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    assert rows["unpickle, in the start-up's process"] == ["60.0", "1.20x"]
    assert rows["pickle, in the worker"] == ["10.0", "0.20x"]
    assert report.endswith("costs this process more than parsing it itself.")
    cheaper = parse_handoff.report({**figures, "loads": 25e-6}, 10)
    assert cheaper.endswith("0.50x: a parse on another core costs this process less than parsing.")


def test_a_quick_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    parse_handoff.main(["--quick"])
    out = capsys.readouterr().out
    assert "Parsed revisions handed across processes (1,500 revisions" in out
    assert "Unpickled / parsed: " in out
