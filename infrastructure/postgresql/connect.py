"""Direct connections to a PostgreSQL database (no pool): to read, to maintain, to test.

One is also made before a pool opens: a ``psycopg_pool`` pool retries failed
connections in the background and only reports "couldn't get a connection
after N sec"; the reason (refused, unknown database, authentication) goes to
a log record. Connecting once, directly, surfaces libpq's own message
instead. This module imports psycopg: only PostgreSQL stores load it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import IsolationLevel, sql

from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import POSTGRES_CONNINFO, StoreLocation

# A server that only reads: a hot standby replaying its primary's WAL, or one whose
# transactions are read-only by default (``default_transaction_read_only``).
_READS_ONLY = "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'"


def prepare_log(location: StoreLocation, env: dict[str, str], create: bool) -> bool:
    """Before a log's pool opens, connect once (:func:`connect`); whether the server only
    reads, so that the log is opened as it is (no DDL, no writes) and follows what the
    primary's WAL brings in."""
    with connect(location) as connection:
        row = connection.execute(_READS_ONLY).fetchone()
    return bool(row is not None and row[0])


def connect(location: StoreLocation) -> psycopg.Connection[Any]:
    """A direct autocommit connection (no pool) to the database a store URL names; if that
    fails, ``StoreUnavailableError`` naming the store and libpq's reason."""
    try:
        return psycopg.connect(location.env[POSTGRES_CONNINFO], autocommit=True)
    except psycopg.Error as error:
        raise StoreUnavailableError(
            f"cannot connect to {location.where}: {one_line(error)}"
        ) from None


def reading(location: StoreLocation) -> AbstractContextManager[psycopg.Connection[Any]]:
    """A ``REPEATABLE READ READ ONLY`` transaction on the database a store URL names."""
    return _read_transaction(connect(location))


@contextmanager
def _read_transaction(connection: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    with connection:
        connection.isolation_level = IsolationLevel.REPEATABLE_READ
        connection.read_only = True
        with connection.transaction():
            yield connection


def one_line(error: BaseException) -> str:
    """The error's message with its lines (libpq adds hints on new lines) joined by ``; ``."""
    lines = [line.strip() for line in str(error).splitlines()]
    return "; ".join(line for line in lines if line)


def new_test_store(
    directory: Callable[[], Path], server: Callable[[], str]
) -> tuple[str, Callable[[], None]]:
    """A new schema in the database ``server()`` names: its store URL, and how to drop it."""
    schema = f"nenjim_test_{uuid.uuid4().hex[:16]}"
    parts = urlsplit(server())
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    connection_url = urlunsplit(parts._replace(query=urlencode(query)))
    with psycopg.connect(connection_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))

    def drop() -> None:
        with psycopg.connect(connection_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    store = urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))
    return store, drop
