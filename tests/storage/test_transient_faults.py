"""``is_transient`` against faults provoked for real on both SQL backends.

Each fault stays the driver's own error (never a storage conflict);
``is_transient`` says whether running the transaction again may succeed.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage import (
    Backend,
    BackendClosedError,
    ConflictError,
    GuardRef,
    StorageError,
    UniqueConstraintError,
    View,
    is_transient,
)
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)

TIMEOUT = 20.0


@pytest.fixture
def pg_backend(postgres_schema_url: str) -> Iterator[Backend]:
    """A PostgreSQL backend with two anchor rows."""
    backend = PostgresBackend(FIXTURE_RESOURCES, postgres_schema_url)
    roots = backend.view.records(ROOTS)
    for key in ("a", "b"):
        roots.insert(key=key, revision=0, attributes={}, record=opaque_record())
    yield backend
    backend.close()


def _raw(error: BaseException) -> BaseException:
    """``error``, after checking it is a driver error and not a storage error."""
    assert not isinstance(error, StorageError)
    return error


def _insert(view: View, key: str) -> None:
    view.records(WORKFLOW_STATES).insert(key=key, revision=1, attributes={}, record=opaque_record())


# PostgreSQL -----------------------------------------------------------------------


def test_a_terminated_session_is_transient(pg_backend: Backend, postgres_url: str) -> None:
    def body() -> None:
        with pg_backend.transaction() as view:
            scope = pg_backend.current_scope()
            assert scope is not None
            pid = scope.context.connection.info.backend_pid
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            _insert(view, "lost")

    with pytest.raises(psycopg.OperationalError) as raised:
        body()
    assert is_transient(_raw(raised.value))
    _insert(pg_backend.view, "retried")  # and the retry does succeed


def test_a_deadlock_of_opposite_order_locks_is_transient(pg_backend: Backend) -> None:
    both_locked = threading.Barrier(2, timeout=TIMEOUT)
    errors: list[BaseException] = []

    def lock(first: str, second: str) -> None:
        try:
            with pg_backend.transaction() as view:
                view.check(guards=[GuardRef(ROOTS, first)], conditions=[])
                both_locked.wait()
                view.check(guards=[GuardRef(ROOTS, second)], conditions=[])
        except Exception as error:  # checked by the test thread
            errors.append(error)

    threads = [
        threading.Thread(target=lock, args=("a", "b")),
        threading.Thread(target=lock, args=("b", "a")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a locking thread hung"
    (error,) = errors
    assert isinstance(error, psycopg.errors.DeadlockDetected)
    assert is_transient(_raw(error))


def test_a_serialization_failure_is_transient(postgres_url: str, postgres_schema_url: str) -> None:
    schema = parse_qs(urlsplit(postgres_schema_url).query)["schema"][0]
    with psycopg.connect(postgres_url, autocommit=True) as setup:
        setup.execute(f'CREATE TABLE "{schema}".counter (n int)')
        setup.execute(f'INSERT INTO "{schema}".counter VALUES (0)')
    with (
        psycopg.connect(postgres_url) as first,
        psycopg.connect(postgres_url) as second,
    ):
        for conn in (first, second):
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.execute(f'SELECT n FROM "{schema}".counter').fetchall()
        first.execute(f'UPDATE "{schema}".counter SET n = n + 1')
        first.commit()
        with pytest.raises(psycopg.errors.SerializationFailure) as raised:
            second.execute(f'UPDATE "{schema}".counter SET n = n + 1')
    assert is_transient(raised.value)


def test_waiting_past_the_pool_timeout_is_transient(postgres_schema_url: str) -> None:
    url = postgres_schema_url.replace("pool_size=1&max_overflow=7", "pool_size=1&max_overflow=0")
    backend = PostgresBackend(FIXTURE_RESOURCES, url, pool_timeout=0.2)
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with backend.transaction():
            holding.set()
            release.wait(TIMEOUT)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(TIMEOUT)
        with pytest.raises(PoolTimeout) as raised:
            _insert(backend.view, "starved")
        assert is_transient(_raw(raised.value))
    finally:
        release.set()
        holder.join(TIMEOUT)
        backend.close()
    assert not holder.is_alive(), "the connection holder hung"


def test_an_unreachable_server_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(psycopg.OperationalError) as raised:
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2)
    assert is_transient(raised.value)


def test_a_cancelled_statement_and_a_closed_pool_are_not_transient(
    pg_backend: Backend, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        pid = conn.info.backend_pid

        def cancel_soon() -> None:
            time.sleep(0.2)
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute("SELECT pg_cancel_backend(%s)", (pid,))

        canceller = threading.Thread(target=cancel_soon)
        canceller.start()
        with pytest.raises(psycopg.errors.QueryCanceled) as cancelled:
            conn.execute("SELECT pg_sleep(10)")
        canceller.join(TIMEOUT)
        assert not canceller.is_alive(), "the canceller hung"
    assert not is_transient(cancelled.value)

    pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
        postgres_url, min_size=1, open=True
    )
    pool.close()
    with pytest.raises(PoolClosed) as closed:
        pool.getconn()
    assert not is_transient(closed.value)


def test_constraint_violations_and_storage_errors_are_not_transient(
    pg_backend: Backend, postgres_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TEMPORARY TABLE once (k int PRIMARY KEY)")
        conn.execute("INSERT INTO once VALUES (1)")
        with pytest.raises(psycopg.errors.UniqueViolation) as unique:
            conn.execute("INSERT INTO once VALUES (1)")
    assert not is_transient(unique.value)
    with sqlite3.connect(tmp_path / "once.db") as conn:
        conn.execute("CREATE TABLE once (k INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO once VALUES (1)")
        with pytest.raises(sqlite3.IntegrityError) as sqlite_unique:
            conn.execute("INSERT INTO once VALUES (1)")
    assert not is_transient(sqlite_unique.value)

    _insert(pg_backend.view, "taken")
    with pytest.raises(ConflictError) as conflict:
        _insert(pg_backend.view, "taken")
    assert not is_transient(conflict.value)
    pg_backend.close()
    with pytest.raises(BackendClosedError) as after_close:
        _insert(pg_backend.view, "late")
    for error in (
        after_close.value,
        UniqueConstraintError("agent.executions", "one_active_owner"),
        ValueError("not a database error"),
    ):
        assert not is_transient(error)


# SQLite ---------------------------------------------------------------------------


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Iterator[SQLiteBackend]:
    """An SQLite backend that gives up on a held write lock after 50 ms."""
    backend = SQLiteBackend(FIXTURE_RESOURCES, tmp_path / "busy.db", busy_timeout=0.05)
    yield backend
    backend.close()


def test_a_second_sqlite_writer_holding_the_lock_is_transient(
    sqlite_backend: SQLiteBackend,
) -> None:
    blocker = sqlite3.connect(sqlite_backend.path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="locked") as raised:
            _insert(sqlite_backend.view, "blocked")
        assert is_transient(_raw(raised.value))
        blocker.execute("ROLLBACK")
        _insert(sqlite_backend.view, "blocked")  # the retry succeeds once the lock is free
    finally:
        blocker.close()


def test_a_locked_sqlite_table_is_transient(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(3)])
        reading = conn.execute("SELECT x FROM t")
        reading.fetchone()
        with pytest.raises(sqlite3.OperationalError, match="locked") as raised:
            conn.execute("DROP TABLE t")  # a statement still reads the table
        assert raised.value.sqlite_errorcode == sqlite3.SQLITE_LOCKED
        assert is_transient(raised.value)
    finally:
        conn.close()


def test_other_sqlite_operational_errors_are_not_transient(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "plain.db")
    try:
        with pytest.raises(sqlite3.OperationalError) as raised:
            conn.execute("SELECT * FROM missing_table")
        assert not is_transient(raised.value)
    finally:
        conn.close()
