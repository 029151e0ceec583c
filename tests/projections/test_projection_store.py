"""The generic persisted projection store, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import Tracking

from nenjim.infrastructure.log import LogApplication, RebuildLostError
from nenjim.infrastructure.tracking.projections import (
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
    projection_recorder,
)

TABLE = ProjectionTable("test-rows", "test_rows", (("position", "integer"), ("label", "text")))
NEWER = ProjectionTable(TABLE.name, TABLE.table, TABLE.columns, version=2)


class BoomError(Exception):
    pass


@pytest.fixture
def recorder(store_url: str) -> Iterator[ProjectionRecorder]:
    log = LogApplication(store_url)
    yield projection_recorder(log)
    log.close()


def _rows(n: int, start: int = 0, tag: str = "r") -> list[Row]:
    return [(i, f"{tag}{i}") for i in range(start + 1, n + 1)]


def _write(recorder: ProjectionRecorder, upto: int, table: ProjectionTable = TABLE) -> bool:
    return recorder.write(table, lambda after: _rows(upto, after), Tracking(table.name, upto))


def test_rows_and_position_are_written_together_and_read_back(
    recorder: ProjectionRecorder,
) -> None:
    assert recorder.states() == []
    assert recorder.load(TABLE).position == 0
    assert _write(recorder, 3)
    asked: list[int] = []

    def after(position: int) -> list[Row]:
        asked.append(position)
        return _rows(5, position)

    assert recorder.write(TABLE, after, Tracking(TABLE.name, 5))
    assert asked == [3]  # only what the store lacks is asked for
    loaded = recorder.load(TABLE)
    assert (loaded.position, loaded.rows) == (5, _rows(5))
    state = recorder.state(TABLE.name)
    assert state is not None
    assert (state.position, state.version, state.generation) == (5, 1, 1)


def test_a_write_behind_the_stored_position_writes_nothing(recorder: ProjectionRecorder) -> None:
    assert _write(recorder, 4)
    assert not _write(recorder, 4)
    assert not _write(recorder, 2)
    assert recorder.load(TABLE).rows == _rows(4)


def test_a_write_that_fails_midway_leaves_rows_and_position_as_they_were(
    recorder: ProjectionRecorder,
) -> None:
    assert _write(recorder, 2)

    def failing(after: int) -> Iterator[Row]:
        yield (after + 1, "half")
        raise BoomError

    with pytest.raises(BoomError):
        recorder.write(TABLE, failing, Tracking(TABLE.name, 9))
    loaded = recorder.load(TABLE)
    assert (loaded.position, loaded.rows) == (2, _rows(2))


def test_a_rebuild_swaps_in_a_new_generation(recorder: ProjectionRecorder) -> None:
    assert _write(recorder, 3)
    state = recorder.rebuild(TABLE, [(_rows(2, tag="n"), 2), (_rows(4, 2, tag="n"), 4)])
    assert (state.position, state.generation) == (4, 2)
    loaded = recorder.load(TABLE)
    assert (loaded.position, loaded.rows) == (4, _rows(4, tag="n"))
    assert _write(recorder, 6)  # the next write extends the new generation
    assert recorder.load(TABLE).rows == _rows(4, tag="n") + _rows(6, 4)


def test_a_failed_rebuild_leaves_the_served_generation(recorder: ProjectionRecorder) -> None:
    assert _write(recorder, 3)

    def batches() -> Iterator[tuple[list[Row], int]]:
        yield _rows(2, tag="n"), 2
        raise BoomError

    with pytest.raises(BoomError):
        recorder.rebuild(TABLE, batches())
    loaded = recorder.load(TABLE)
    assert (loaded.position, loaded.rows) == (3, _rows(3))
    # The leftover's number is not reused (it might be a concurrent rebuild's table); the
    # swap drops what is left of it.
    state = recorder.rebuild(TABLE, [(_rows(1, tag="n"), 1)])
    assert recorder.load(TABLE).rows == _rows(1, tag="n")
    assert state.generation in {2, 3}  # 3 where the failed rebuild left a table


def test_two_rebuilds_at_once_serve_one_of_them_whole(recorder: ProjectionRecorder) -> None:
    """A rebuild that starts while another fills its table: one of them is served, whole;
    the other is refused with ``RebuildLostError`` (or, in memory, swapped in after it)."""
    assert _write(recorder, 3)
    inner: list[ProjectionState] = []

    def outer_batches() -> Iterator[tuple[list[Row], int]]:
        yield _rows(2, tag="a"), 2
        inner.append(recorder.rebuild(TABLE, [(_rows(4, tag="b"), 4)]))
        yield _rows(4, 2, tag="a"), 4

    try:
        recorder.rebuild(TABLE, outer_batches())
    except RebuildLostError:
        assert recorder.load(TABLE).rows == _rows(4, tag="b")
    else:
        assert recorder.load(TABLE).rows == _rows(4, tag="a")
    assert len(inner) == 1


def test_a_new_fold_version_replaces_the_rows_and_an_old_one_stays_out(
    recorder: ProjectionRecorder,
) -> None:
    assert _write(recorder, 3)
    assert recorder.load(NEWER).position == 0  # rows of another version are not read
    assert _write(recorder, 2, NEWER)  # replaced by a full generation of the new version
    assert recorder.load(NEWER).rows == _rows(2)
    assert recorder.load(TABLE).position == 0
    assert not _write(recorder, 9)  # an older build never writes over a newer fold
    assert recorder.load(NEWER).position == 2


def test_reading_the_status_of_a_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = LogApplication(f"sqlite://{path}")
    try:
        assert projection_recorder(log).states() == []
    finally:
        log.close()
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert not {t for t in tables if t.startswith(("nenjim_projections", "test_rows"))}


def test_a_table_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="first column"):
        ProjectionTable("x", "x", (("label", "text"),))
    with pytest.raises(ValueError, match="not an identifier"):
        ProjectionTable("x", "x; DROP", (("position", "integer"),))
    with pytest.raises(ValueError, match="column types"):
        ProjectionTable("x", "x", (("position", "integer"), ("v", "blob")))
