"""The machine-readable benchmark results: tables parsed back exactly, goal rows compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import results
from benchmarks.common import mark, table

REPORT = "\n\n".join(
    [
        "## 1. Something",
        table(
            "Ingest",
            ["store", "writers", "ratio", "met"],
            [
                ["SQLite", "1", "0.69x", mark(False)],
                ["SQLite", "8", "2.10x", mark(True)],
            ],
        ),
        "prose between tables | with a pipe",
        table("Reference", ["what", "value"], [["rows", "12"]]),
    ]
)


def test_every_table_is_parsed_back_cell_for_cell() -> None:
    tables = results.parse_tables(REPORT)
    assert [t.title for t in tables] == ["Ingest", "Reference"]
    assert tables[0].header == ["store", "writers", "ratio", "met"]
    assert tables[0].rows == [["SQLite", "1", "0.69x", "❌"], ["SQLite", "8", "2.10x", "✅"]]
    assert tables[1].rows == [["rows", "12"]]


def test_only_rows_with_a_verdict_are_goal_rows() -> None:
    tables = [t.as_json() for t in results.parse_tables(REPORT)]
    goals = results.goal_rows(tables)
    assert list(goals) == ["Ingest / SQLite / 1", "Ingest / SQLite / 8"]


def test_a_result_file_holds_commit_machine_and_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    path = results.write_result(REPORT, [("commit", "abc1234 (0 paths changed)")], 12.34)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert path.parent == tmp_path
    assert path.name.endswith("-abc1234.json")
    assert document["commit"] == "abc1234"
    assert document["machine"] == {"commit": "abc1234 (0 paths changed)"}
    assert document["seconds"] == 12.3
    assert document["tables"][0]["rows"][1] == ["SQLite", "8", "2.10x", "✅"]


def test_comparison_puts_today_next_to_the_previous_run() -> None:
    today = {"commit": "new", "tables": [t.as_json() for t in results.parse_tables(REPORT)]}
    older = REPORT.replace("0.69x", "0.50x").replace("| SQLite | 8 ", "| SQLite | 9 ")
    previous = {"commit": "old", "tables": [t.as_json() for t in results.parse_tables(older)]}
    lines = results.comparison(today, previous).splitlines()
    assert lines[0] == "| goal row | today (new) | previous (old) |"
    assert "| Ingest / SQLite / 1 | 0.69x · ❌ | 0.50x · ❌ |" in lines
    assert "| Ingest / SQLite / 8 | 2.10x · ✅ | — |" in lines


def test_comparing_without_any_result_file_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    assert results.main([]) == 1
    assert "no result files" in capsys.readouterr().err


def _memory_run(imports: str, worst: str, ratio: str) -> list[dict[str, object]]:
    report = "\n\n".join(
        [
            table(
                f"Peak memory of a cold start (imports alone: {imports})",
                ["store", "revisions", "added / texts", "met"],
                [["SQLite", "10,000", ratio, mark(True)]],
            ),
            table(
                "as_of target",
                ["target", "wanted", "measured", ""],
                [[f"as_of p99 (worst lookup: {worst})", "<= 10 µs", "2.05 µs", mark(True)]],
            ),
        ]
    )
    return [t.as_json() for t in results.parse_tables(report)]


def test_a_remark_that_carries_a_measured_value_does_not_split_a_goal_row() -> None:
    today = {"commit": "new", "tables": _memory_run("29.6 MiB", "`as_of(str, str)`", "2.78x")}
    previous = {"commit": "old", "tables": _memory_run("29.5 MiB", "`as_of(Coord)`", "2.80x")}
    lines = results.comparison(today, previous).splitlines()
    assert "| Peak memory of a cold start / SQLite / 10,000 | 2.78x · ✅ | 2.80x · ✅ |" in lines
    assert "| as_of target / as_of p99 / <= 10 µs | 2.05 µs · ✅ | 2.05 µs · ✅ |" in lines
