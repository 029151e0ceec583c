"""The ingest benchmark's Python budget: wall time per ingest left to Python, from the rates."""

from __future__ import annotations

from benchmarks.common import Rate
from benchmarks.ingest import BackendResult, _budget_table


def _rate(per_second: float) -> Rate:
    return Rate((per_second,), exhausted=False)


def test_the_budget_is_the_time_per_ingest_each_variant_leaves() -> None:
    result = BackendResult(
        {
            "floor-ours": {1: _rate(2_000)},  # 500 µs per ingest
            "floor-same": {1: _rate(4_000)},  # 250 µs
            "floor-stock": {1: _rate(3_200)},  # 312.5 µs
            "stock": {1: _rate(4_000), 8: _rate(3_000)},  # 250 µs
            "raw": {1: _rate(8_000), 8: _rate(6_000)},  # 125 µs
        },
        {},
    )
    rows = [
        line.split("|")[1:-1]
        for line in _budget_table("SQLite", result, {1: 1.0}, 25.0).splitlines()
    ]
    cells = {row[0].strip(): [cell.strip() for cell in row[1:]] for row in rows if len(row) == 3}
    assert cells["our Python: nenjim ingest - the same writes by hand (floor passes)"] == [
        "250",
        "-",
    ]
    assert cells[
        "what the goal leaves to all Python: stock save / goal - the same writes by hand"
    ] == ["62", "-"]
    assert cells[
        "`eventsourcing`'s own cost around one row: stock save - raw 1-row INSERT "
        "(its Python; on PostgreSQL also its extra round trips)"
    ] == [
        "125",
        "-",
    ]
    assert cells["the same, less the runtime-protocol checks nenjim's save skips (25 µs)"] == [
        "100",
        "-",
    ]
