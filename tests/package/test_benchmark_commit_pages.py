"""The page counter of ``benchmarks.probes.commit_pages``: frames per write, and whose pages."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest

from benchmarks.probes.commit_pages import PASSES, frame_bytes, frames_per_write, wal_pages


def _wal_file(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA wal_autocheckpoint = 0")
    return connection


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # One row of one table changed: one page, that table's.
        (["CREATE TABLE other (k INTEGER PRIMARY KEY, v TEXT)"], {"rows": 1.0}),
        # An indexed column changed: the table's page and the index's.
        (["CREATE INDEX rows_v ON rows (v)"], {"rows": 1.0, "rows_v": 1.0}),
    ],
)
def test_a_write_counts_one_frame_per_page_it_changes_owned_by_its_b_tree(
    tmp_path: Path, schema: Sequence[str], expected: dict[str, float]
) -> None:
    path = tmp_path / "pages.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE rows (k INTEGER PRIMARY KEY, v TEXT)")
        for statement in schema:
            connection.execute(statement)
        connection.execute("INSERT INTO rows VALUES (1, 'a')")
        counter = itertools.count()

        def update() -> None:
            connection.execute("UPDATE rows SET v = ? WHERE k = 1", (f"{next(counter):06d}",))

        frames, by_tree = frames_per_write(path, update)
    assert frames == sum(expected.values())
    assert by_tree == expected


def test_an_empty_wal_holds_no_pages(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert wal_pages(path) == []


def test_a_pass_of_fewer_writes_counts_frames_per_write_all_the_same(tmp_path: Path) -> None:
    """Passes of 6 writes (the 100-entry append's) run 6 writes a pass, per write counted."""
    path = tmp_path / "short.db"
    with closing(_wal_file(path)) as connection:
        connection.execute("CREATE TABLE rows (k INTEGER PRIMARY KEY, v TEXT)")
        connection.execute("INSERT INTO rows VALUES (1, 'a')")
        writes = itertools.count()

        def update() -> None:
            connection.execute("UPDATE rows SET v = ? WHERE k = 1", (f"{next(writes):06d}",))

        frames, by_tree = frames_per_write(path, update, per_pass=6)
    assert next(writes) == PASSES * 6
    assert (frames, by_tree) == (1.0, {"rows": 1.0})


@pytest.mark.parametrize("page_size", [1024, 4096])
def test_a_frame_is_the_files_page_and_a_24_byte_header(tmp_path: Path, page_size: int) -> None:
    path = tmp_path / f"pages-{page_size}.db"
    with closing(sqlite3.connect(path)) as connection:
        connection.execute(f"PRAGMA page_size = {page_size}")
        connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    assert frame_bytes(path) == page_size + 24
