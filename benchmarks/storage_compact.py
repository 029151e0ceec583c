"""The compaction benchmark: a store's size after writing N records, deleting them, compacting.

N records of about 1 kB each (``workflow.states``, incompressible text) are written
through the Storage SPI in transactions of 500, deleted with plain ``Records.delete``
(the rows go, the log keeps every insert and a tombstone), and the store is compacted
(``nenjim.admin.compaction.compact_storage``, what ``nenjim storage compact`` runs).
Each size is shown as a ratio to the size right after writing, measured in the same
run. SQLite: the database file plus its ``-wal`` (the backend closed between steps);
PostgreSQL (when it answers): ``pg_total_relation_size`` summed over the schema's tables.

A plain delete keeps the payloads in the log, so compaction gives back the space of the
deleted inline rows only; a purge that also overwrites the log's states leaves the log
small too (``tests/storage/test_storage_compact.py``).

Run: ``python -m benchmarks.storage_compact [--quick]``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg
from psycopg import sql

from benchmarks.common import (
    PG_URL,
    Options,
    machine_table,
    parse_options,
    pg_problem,
    pg_schema,
    pg_store_url,
    ratio_text,
    scratch_dir,
    table,
)
from nenjim.admin.compaction import compact_storage
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import DurableRecord, open_backend

RESOURCE = "workflow.states"
RECORDS = 10_000
QUICK_RECORDS = 1_000
BATCH = 500


def _write_and_delete(url: str, count: int, measure: Callable[[], int]) -> list[tuple[str, int]]:
    """Write ``count`` records, delete them; the store's size after each step."""
    open_backend(url, CATALOG).close()  # creates the store's tables
    sizes = [("empty store", measure())]
    backend = open_backend(url, CATALOG)
    try:
        keys = [f"k{index}" for index in range(count)]
        for start in range(0, count, BATCH):
            with backend.transaction() as view:
                records = view.records(RESOURCE)
                for key in keys[start : start + BATCH]:
                    payload = {"text": secrets.token_hex(480), "key": key}
                    record = DurableRecord("note", "0.1", payload)
                    records.insert(key=key, revision=1, attributes={}, record=record)
    finally:
        backend.close()
    sizes.append((f"after writing {count:,} records", measure()))
    backend = open_backend(url, CATALOG)
    try:
        for start in range(0, count, BATCH):
            with backend.transaction() as view:
                records = view.records(RESOURCE)
                for key in keys[start : start + BATCH]:
                    records.delete(key=key, expected_revision=1)
    finally:
        backend.close()
    sizes.append(("after deleting them", measure()))
    return sizes


def _sqlite_size(path: Path) -> int:
    files = (path, Path(f"{path}-wal"))
    return sum(file.stat().st_size for file in files if file.exists())


def _pg_size(schema: str) -> int:
    query = sql.SQL(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = {} AND c.relkind IN ('r', 'm')"
    ).format(sql.Literal(schema))
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row is not None else 0


def _rows(url: str, count: int, measure: Callable[[], int]) -> tuple[list[list[str]], float]:
    sizes = _write_and_delete(url, count, measure)
    started = time.perf_counter()
    report = compact_storage(url)
    seconds = time.perf_counter() - started
    assert report.bytes_after == measure()
    sizes.append(("after compacting", report.bytes_after))
    written = sizes[1][1]
    rows = [[step, f"{size:,}", ratio_text(size / written)] for step, size in sizes]
    return rows, seconds


def run(options: Options) -> str:
    """Measure SQLite, then PostgreSQL if it answers."""
    count = QUICK_RECORDS if options.quick else RECORDS
    header = ["step", "bytes", "/ after writing"]
    out: list[str] = []
    with scratch_dir() as directory:
        path = directory / "compact.db"
        rows, seconds = _rows(f"sqlite://{path}", count, lambda: _sqlite_size(path))
    out.append(table("SQLite: database file + -wal", header, rows))
    out.append(f"SQLite compaction took {seconds:.2f} s.")
    problem = pg_problem()
    if problem is None:
        with pg_schema("compact") as schema:
            rows, seconds = _rows(pg_store_url(schema), count, lambda: _pg_size(schema))
        out.append(table("PostgreSQL: pg_total_relation_size of the schema's tables", header, rows))
        out.append(f"PostgreSQL compaction (VACUUM FULL of each table) took {seconds:.2f} s.")
    else:
        out.append(f"PostgreSQL skipped: {problem}")
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "storage_compact")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
