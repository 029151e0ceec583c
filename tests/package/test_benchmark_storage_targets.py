"""The Storage SPI benchmark's goal rows: each ratio against its goal, with a verdict."""

from __future__ import annotations

from contextlib import ExitStack

from benchmarks import results, storage
from benchmarks.common import Rate
from nenjim.infrastructure.storage import Backend


def _cells(ratios: dict[str, dict[int, float]]) -> storage.Results:
    """Results whose baseline made 1 operation/s, so that ours' rate is the ratio."""
    return {
        name: {
            threads: storage.Cell(Rate((ratio,), False), Rate((1.0,), False))
            for threads, ratio in by_threads.items()
        }
        for name, by_threads in ratios.items()
    }


RATIOS = {
    "insert": {1: 0.59, 8: 1.7},
    "replace": {1: 0.72, 8: 2.1},
    "append1": {1: 0.73, 8: 1.4},
    "append100": {1: 0.55, 8: 0.49},
    "check": {1: 0.59, 8: 0.58},
}


def _never_opened(stack: ExitStack) -> Backend:
    raise AssertionError("the goal rows open no store")


def _goals(name: str) -> dict[str, list[str]]:
    store = storage.Store(name, _never_opened, None)
    report = storage.targets_table(store, _cells(RATIOS))
    return results.goal_rows([t.as_json() for t in results.parse_tables(report)])


def test_every_write_and_check_on_sqlite_is_judged_against_its_goal() -> None:
    goals = _goals("SQLite")
    title = "Storage SPI targets, SQLite"
    assert goals[f"{title} / record insert, 1 thread(s) / >= 0.6x"][2:] == ["0.59x", "❌"]
    assert goals[f"{title} / record insert, 8 thread(s) / >= 0.6x"][2:] == ["1.70x", "✅"]
    assert goals[f"{title} / stream append, 100 entries, 8 thread(s) / >= 0.5x"][3] == "❌"
    assert goals[f"{title} / check(): 1 guard + 3 conditions, 1 thread(s) / >= 0.5x"][3] == "✅"
    group = [row for key, row in goals.items() if "group commit" in key]
    assert [row[1:] for row in group] == [[">= 1.5x", "1.40x", "❌"]]
    assert len(goals) == 11


def test_postgresql_has_no_check_goal_and_no_group_commit_row() -> None:
    goals = _goals("PostgreSQL")
    assert len(goals) == 8
    assert not [key for key in goals if "check()" in key or "group commit" in key]
