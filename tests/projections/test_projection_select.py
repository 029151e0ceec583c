"""Rows of a persisted projection found by an indexed select, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from eventsourcing.persistence import Tracking

from nenjim.infrastructure.log import LogApplication
from nenjim.infrastructure.tracking.projections import (
    ProjectionRecorder,
    ProjectionTable,
    Row,
    RowQuery,
    projection_recorder,
)

COLUMNS = (("position", "integer"), ("name", "text"), ("version", "text"))
PLAIN = ProjectionTable("select-rows", "select_rows", COLUMNS)
INDEXED = ProjectionTable(PLAIN.name, PLAIN.table, COLUMNS, unique=(("name", "version"),))
# Code point order: "Z" < "a" < "b" < "é" (a locale's collation would order them otherwise).
ROWS: list[Row] = [
    (1, "b", "2"),
    (2, "a", "1"),
    (3, "é", "1"),
    (4, "Z", "1"),
    (5, "b", "1"),
    (6, "a", "3"),
]


@pytest.fixture
def recorder(store_url: str) -> Iterator[ProjectionRecorder]:
    log = LogApplication(store_url)
    yield projection_recorder(log)
    log.close()


def _write(recorder: ProjectionRecorder, table: ProjectionTable, rows: list[Row]) -> bool:
    last = rows[-1][0]
    assert isinstance(last, int)
    return recorder.write(
        table, lambda after: [r for r in rows if r[0] > after], Tracking(table.name, last)
    )


def test_select_filters_orders_and_pages_in_code_point_order(
    recorder: ProjectionRecorder,
) -> None:
    assert recorder.select(INDEXED, RowQuery()) == []  # nothing stored yet
    assert _write(recorder, INDEXED, ROWS)
    names = RowQuery(columns=("name",), order=("name",), distinct=True)
    assert recorder.select(INDEXED, names) == [("Z",), ("a",), ("b",), ("é",)]
    page = RowQuery(
        columns=("name",), bounds=(("name", ">", "a"),), order=("name",), distinct=True, limit=1
    )
    assert recorder.select(INDEXED, page) == [("b",)]
    chain = RowQuery(equal=(("name", "b"),), bounds=(("position", "<=", 4),), order=("version",))
    assert recorder.select(INDEXED, chain) == [(1, "b", "2")]
    newest = RowQuery(
        columns=("version",), equal=(("name", "a"),), order=("version",), descending=True
    )
    assert recorder.select(INDEXED, newest) == [("3",), ("1",)]
    among = RowQuery(any_of=("name", ("a", "Z")), order=("name", "version"))
    assert recorder.select(INDEXED, among) == [(4, "Z", "1"), (2, "a", "1"), (6, "a", "3")]
    assert recorder.select(INDEXED, RowQuery(any_of=("name", ()))) == []
    with pytest.raises(ValueError, match="no columns"):
        recorder.select(INDEXED, RowQuery(order=("missing",)))


def test_a_table_written_before_its_index_was_declared_gets_it_once(
    recorder: ProjectionRecorder, store_url: str
) -> None:
    assert _write(recorder, PLAIN, ROWS[:3])
    created = recorder.ensure_indexes(INDEXED)
    assert created is (not store_url.startswith("memory"))  # memory filters lists: no index
    assert not recorder.ensure_indexes(INDEXED)
    assert _write(recorder, INDEXED, ROWS)
    assert recorder.select(INDEXED, RowQuery(columns=("position",), order=("position",))) == [
        (p,) for p in range(1, 7)
    ]


def test_the_unique_index_refuses_a_second_row_of_one_key_on_an_sql_store(
    recorder: ProjectionRecorder, store_url: str
) -> None:
    if store_url.startswith("memory"):
        assert not recorder.ensure_indexes(INDEXED)  # nothing to enforce it on
        return
    assert _write(recorder, INDEXED, ROWS[:2])
    with pytest.raises(Exception, match=r"(?i)unique"):
        _write(recorder, INDEXED, [(3, "b", "2")])
    assert recorder.select(INDEXED, RowQuery(columns=("position",))) == [(1,), (2,)]


def test_a_rebuilt_generation_is_swapped_in_with_its_indexes(
    recorder: ProjectionRecorder, store_url: str
) -> None:
    assert _write(recorder, INDEXED, ROWS[:2])
    state = recorder.rebuild(INDEXED, [(ROWS[:3], 3), (ROWS[3:], 6)])
    assert (state.position, state.generation) == (6, 2)
    assert not recorder.ensure_indexes(INDEXED)  # nothing missing
    names = RowQuery(columns=("name",), order=("name",), distinct=True)
    assert recorder.select(INDEXED, names) == [("Z",), ("a",), ("b",), ("é",)]
    if not store_url.startswith("memory"):
        with pytest.raises(Exception, match=r"(?i)unique"):
            _write(recorder, INDEXED, [*ROWS, (7, "a", "1")])
