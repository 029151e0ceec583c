"""The page counter of ``benchmarks.commit_pages``: frames per write, and whose pages they are."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from benchmarks.commit_pages import frames_per_write, wal_pages


def _wal_file(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA wal_autocheckpoint = 0")
    return connection


def test_a_write_that_changes_one_page_of_one_table_counts_one_frame_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE small (k INTEGER PRIMARY KEY, v TEXT)")
        connection.execute("CREATE TABLE other (k INTEGER PRIMARY KEY, v TEXT)")
        connection.execute("INSERT INTO small VALUES (1, 'a')")
        counter = iter(range(10**6))

        def update() -> None:
            connection.execute("UPDATE small SET v = ? WHERE k = 1", (str(next(counter)),))

        frames, by_tree = frames_per_write(path, update)
    assert frames == 1.0
    assert by_tree == {"small": 1.0}


def test_a_write_to_a_table_and_its_index_counts_a_frame_for_each(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE rows (k INTEGER PRIMARY KEY, v TEXT)")
        connection.execute("CREATE INDEX rows_v ON rows (v)")
        connection.execute("INSERT INTO rows VALUES (1, 'a')")
        counter = iter(range(10**6))

        def update() -> None:
            connection.execute("UPDATE rows SET v = ? WHERE k = 1", (f"{next(counter):06d}",))

        frames, by_tree = frames_per_write(path, update)
    assert frames == 2.0
    assert by_tree == {"rows": 1.0, "rows_v": 1.0}


def test_an_empty_wal_holds_no_pages(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert wal_pages(path) == []
