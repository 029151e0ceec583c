"""Every byte a store keeps on disk, to look for data that must be gone (a purge, a compact).

- :func:`sqlite_bytes`: the database file, its ``-wal`` and its ``-shm``, as they are.
- :func:`await_older_transactions`: wait until no transaction on the server that began
  before the call is still open (``VACUUM FULL`` keeps the row versions one may read).
- :func:`relation_bytes`: every file of every table of a PostgreSQL schema, their TOAST
  tables and all their indexes (the main fork, each 1 GB segment ``.1``, ``.2``, ...),
  after a ``CHECKPOINT`` so that what the server holds in its buffers is in the files.
  The files are read through the server (``pg_read_binary_file`` of
  ``pg_relation_filepath``); where the role may not, from the data directory
  (``SHOW data_directory``) when this process can read it. If neither works the test
  FAILS with the reason: a scan that could not look must never pass as one that found
  nothing.

A scan is only evidence of absence if it can also find presence: tests assert that
the scan finds their marker before they assert that it is gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest

Via = Literal["auto", "server", "files"]

# The store URL's own parameters, which libpq does not know.
_STORE_PARAMETERS = {"schema", "pool_size", "max_overflow"}

_RELATIONS = """
WITH heaps AS (
    SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = %s AND c.relkind IN ('r', 'm')
), all_heaps AS (
    SELECT oid FROM heaps UNION SELECT reltoastrelid FROM heaps WHERE reltoastrelid <> 0
)
SELECT oid FROM all_heaps
UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM all_heaps)
ORDER BY 1
"""


def sqlite_bytes(path: str | Path) -> bytes:
    """The bytes of an SQLite database: its file, then ``-wal`` and ``-shm`` if present."""
    path = Path(path)
    files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    return b"".join(file.read_bytes() for file in files if file.exists())


def sqlite_size(path: str | Path) -> int:
    """The database file's size plus its ``-wal``'s, in bytes (what ``compact`` reports)."""
    path = Path(path)
    files = (path, Path(f"{path}-wal"))
    return sum(file.stat().st_size for file in files if file.exists())


def connection_url(store_url: str) -> str:
    """The libpq URL of a PostgreSQL store URL (its ``schema``, pool sizes removed)."""
    parts = urlsplit(store_url)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key not in _STORE_PARAMETERS
    ]
    return urlunsplit(parts._replace(query=urlencode(query)))


def relation_bytes(
    conn_or_url: psycopg.Connection[Any] | str, schema: str, *, via: Via = "auto"
) -> bytes:
    """The bytes of every relation file of the tables of ``schema`` (see the module).

    ``via``: ``server`` or ``files`` forces one way of reading (a test of each);
    ``auto`` reads through the server and falls back to the data directory.
    """
    if isinstance(conn_or_url, str):
        with psycopg.connect(connection_url(conn_or_url), autocommit=True) as conn:
            return relation_bytes(conn, schema, via=via)
    conn = conn_or_url
    if not conn.autocommit:
        conn.commit()  # CHECKPOINT cannot run in a transaction block
        conn.autocommit = True
    try:
        conn.execute("CHECKPOINT")
    except psycopg.Error as error:
        pytest.fail(
            f"disk scan of PostgreSQL schema {schema!r}: CHECKPOINT failed ({error}); the role "
            "needs superuser or pg_checkpoint so that the files hold what the server buffers"
        )
    paths = [
        str(row[0])
        for row in conn.execute(
            f"SELECT pg_relation_filepath(oid) FROM ({_RELATIONS}) AS r", (schema,)
        ).fetchall()
        if row[0] is not None
    ]
    reasons: list[str] = []
    if via in ("auto", "server"):
        try:
            return b"".join(_segments_through_server(conn, path) for path in paths)
        except psycopg.errors.InsufficientPrivilege as error:
            reasons.append(f"pg_read_binary_file: {error}")
    if via in ("auto", "files"):
        try:
            row = conn.execute("SHOW data_directory").fetchone()
            assert row is not None
            directory = Path(str(row[0]))
            return b"".join(_segments_on_disk(directory, path) for path in paths)
        except psycopg.errors.InsufficientPrivilege as error:
            reasons.append(f"SHOW data_directory: {error}")
        except OSError as error:
            reasons.append(f"reading the data directory: {error}")
    pytest.fail(
        f"disk scan of PostgreSQL schema {schema!r}: cannot read its relation files "
        f"({'; '.join(reasons)}); grant the role pg_read_server_files, or run the tests "
        "where the data directory is readable"
    )


def _segments_through_server(conn: psycopg.Connection[Any], path: str) -> bytes:
    chunks: list[bytes] = []
    for segment in _segment_names(path):
        row = conn.execute("SELECT (pg_stat_file(%s, true)).size", (segment,)).fetchone()
        if row is None or row[0] is None:
            break
        data = conn.execute("SELECT pg_read_binary_file(%s)", (segment,)).fetchone()
        assert data is not None
        chunks.append(bytes(data[0]))
    return b"".join(chunks)


def _segments_on_disk(directory: Path, path: str) -> bytes:
    chunks: list[bytes] = []
    for segment in _segment_names(path):
        file = directory / segment
        if not file.exists():
            if segment == path:  # every relation has its first segment
                raise OSError(f"{file} cannot be found or read here")
            break
        chunks.append(file.read_bytes())
    return b"".join(chunks)


def _segment_names(path: str) -> Iterator[str]:
    """The relation's main fork: its first file, then ``.1``, ``.2``, ... (1 GB segments)."""
    yield path
    number = 1
    while True:
        yield f"{path}.{number}"
        number += 1


def await_older_transactions(store_url: str, timeout: float = 30.0) -> None:
    """On PostgreSQL, wait until every client transaction on the store's server that began
    before this call has ended; nothing to wait for on SQLite.

    A compaction copies the row versions such a transaction may still read (another
    test's, when tests share the server; one open in another database held them back
    too, seen on PostgreSQL 15), so a test that looks for a purged value's bytes after
    one compacts once they are gone. The test FAILS after ``timeout``.
    """
    if not store_url.startswith("postgresql"):
        return
    with psycopg.connect(connection_url(store_url), autocommit=True) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        started, deadline = row[0], time.monotonic() + timeout
        while True:
            found = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' "
                "AND xact_start < %s AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)",
                (started,),
            ).fetchone()
            assert found is not None
            if found[0] == 0:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{found[0]} transactions older than {started} still open")
            time.sleep(0.05)
