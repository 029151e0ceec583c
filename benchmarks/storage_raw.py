"""The hand-written baselines of ``benchmarks.storage``: raw ``sqlite3`` and psycopg.

Each baseline does, in one transaction, what a hand-written application
would do for the same durable effect as the SPI operation it is compared
with, on its own small schema:

* ``raw_roots (key, revision, payload)``: the anchors;
* ``raw_records (key, revision, attributes JSON, payload JSON)``, primary key
  ``key`` plus one ``(owner, active)`` expression index so the ``check()``
  condition query is indexed as ours is;
* ``raw_heads (stream, head)`` and ``raw_entries (stream, position, entry_id,
  payload)``, primary key ``(stream, position)``.

Operations (``BEGIN IMMEDIATE`` ... ``COMMIT`` on SQLite, ``conn.transaction()``
on an autocommit psycopg connection, i.e. ``BEGIN`` ... ``COMMIT`` on
PostgreSQL; every result checked):

* insert: one ``INSERT`` of a row;
* replace: ``UPDATE ... SET revision = ? + 1, ... WHERE key = ? AND revision = ?``;
* append of n: ``UPDATE raw_heads SET head = ? WHERE stream = ? AND head = ?``,
  then the n entry ``INSERT``\\ s through ``executemany`` (pipelined by psycopg);
* check: the anchor ``SELECT ... FOR UPDATE`` (PostgreSQL) or a plain ``SELECT``
  (SQLite, where ``BEGIN IMMEDIATE`` already locks), then one query per
  condition: the anchor's revision, the stream's head, and "no active row of
  this owner" on the expression index.

Durability is the backends': SQLite WAL with ``synchronous=FULL``, PostgreSQL
with the server's ``synchronous_commit`` (on by default).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from benchmarks.common import PG_URL, Step

CHECK_ENTRIES = 10
"""Entries in each thread's stream (and inactive rows of its owner) before ``check()``."""

_SQLITE_DDL = (
    "CREATE TABLE raw_roots (key TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
    "payload TEXT NOT NULL)",
    "CREATE TABLE raw_records (key TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
    "attributes TEXT NOT NULL, payload TEXT NOT NULL)",
    "CREATE INDEX raw_records_owner_active ON raw_records "
    "(json_extract(attributes, '$.owner'), json_extract(attributes, '$.active'))",
    "CREATE TABLE raw_heads (stream TEXT PRIMARY KEY, head INTEGER NOT NULL)",
    "CREATE TABLE raw_entries (stream TEXT NOT NULL, position INTEGER NOT NULL, "
    "entry_id TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (stream, position))",
)
_PG_DDL = (
    "CREATE TABLE {s}.raw_roots (key text PRIMARY KEY, revision bigint NOT NULL, "
    "payload text NOT NULL)",
    "CREATE TABLE {s}.raw_records (key text PRIMARY KEY, revision bigint NOT NULL, "
    "attributes jsonb NOT NULL, payload text NOT NULL)",
    "CREATE INDEX raw_records_owner_active ON {s}.raw_records "
    "((attributes->>'owner'), (attributes->>'active'))",
    "CREATE TABLE {s}.raw_heads (stream text PRIMARY KEY, head bigint NOT NULL)",
    "CREATE TABLE {s}.raw_entries (stream text NOT NULL, position bigint NOT NULL, "
    "entry_id text NOT NULL, payload text NOT NULL, PRIMARY KEY (stream, position))",
)


def _attributes(owner: str, active: bool) -> str:
    return json.dumps({"owner": owner, "active": active}, separators=(",", ":"))


class _Sql:
    """The baseline statements in one placeholder style, with one table prefix."""

    def __init__(self, mark: str, prefix: str, *, postgres: bool) -> None:
        def q(text: str) -> str:
            return text.replace("?", mark).replace("{t}", prefix)

        lock = " FOR UPDATE" if postgres else ""
        owner, active = (
            ("(attributes->>'owner')", "(attributes->>'active')")
            if postgres
            else ("json_extract(attributes, '$.owner')", "json_extract(attributes, '$.active')")
        )
        self.active_true: object = "true" if postgres else 1
        self.insert_root = q("INSERT INTO {t}raw_roots (key, revision, payload) VALUES (?, 0, ?)")
        self.insert_record = q(
            "INSERT INTO {t}raw_records (key, revision, attributes, payload) VALUES (?, ?, ?, ?)"
        )
        self.replace_record = q(
            "UPDATE {t}raw_records SET revision = ? + 1, attributes = ?, payload = ? "
            "WHERE key = ? AND revision = ?"
        )
        self.insert_head = q("INSERT INTO {t}raw_heads (stream, head) VALUES (?, ?)")
        self.move_head = q("UPDATE {t}raw_heads SET head = ? WHERE stream = ? AND head = ?")
        self.insert_entry = q(
            "INSERT INTO {t}raw_entries (stream, position, entry_id, payload) VALUES (?, ?, ?, ?)"
        )
        self.anchor = q("SELECT 1 FROM {t}raw_roots WHERE key = ?" + lock)
        self.root_revision = q("SELECT revision FROM {t}raw_roots WHERE key = ?")
        self.head = q("SELECT head FROM {t}raw_heads WHERE stream = ?")
        self.active_rows = q(
            f"SELECT 1 FROM {{t}}raw_records WHERE {owner} = ? AND {active} = ? LIMIT 1"
        )


Transaction = Callable[[Callable[[Any], object]], object]
"""Run ``body(connection)`` in one transaction of one connection."""


@dataclass(frozen=True, slots=True)
class RawWork:
    """What each baseline worker does: ``kind`` (insert, replace, append, check), the append
    ``batch``, the payload JSON text of every row and the most operations it may do."""

    kind: str
    batch: int
    payload: str
    capacity: int


def _steps(work: RawWork, stmt: _Sql, transactions: list[Transaction]) -> list[Step]:
    """Set each thread's anchor up (own root, record, stream), then one step per thread."""
    return [
        _setup(work, stmt, transaction, f"raw-{index}")
        for index, transaction in enumerate(transactions)
    ]


def _setup(work: RawWork, stmt: _Sql, transaction: Transaction, root: str) -> Step:
    op, batch, payload, capacity = work.kind, work.batch, work.payload, work.capacity
    record_key = f"{root}/r"

    def prepare(conn: Any) -> None:
        conn.execute(stmt.insert_root, (root, payload))
        if op == "replace":
            attributes = _attributes(root, True)
            conn.execute(stmt.insert_record, (record_key, 0, attributes, payload))
        if op == "check":
            inactive = _attributes(root, False)
            for n in range(CHECK_ENTRIES):
                conn.execute(stmt.insert_record, (f"{root}/c{n}", 0, inactive, payload))
                conn.execute(stmt.insert_entry, (root, n + 1, f"e{n + 1}", payload))
        conn.execute(stmt.insert_head, (root, CHECK_ENTRIES if op == "check" else 0))

    transaction(prepare)
    counter = itertools.count()
    state = {"revision": 0, "head": 0}

    def insert(conn: Any) -> None:
        key = f"{root}/x{next(counter)}"
        conn.execute(stmt.insert_record, (key, 0, _attributes(root, False), payload))

    def replace(conn: Any) -> None:
        revision = state["revision"]
        changed = conn.execute(
            stmt.replace_record,
            (revision, _attributes(root, True), payload, record_key, revision),
        ).rowcount
        if changed != 1:
            raise RuntimeError(f"baseline replace of {record_key} at {revision} lost its CAS")
        state["revision"] = revision + 1

    def append(conn: Any) -> None:
        head = state["head"]
        moved = conn.execute(stmt.move_head, (head + batch, root, head)).rowcount
        if moved != 1:
            raise RuntimeError(f"baseline append to {root} at head {head} lost its CAS")
        rows = [(root, head + n, f"e{head + n}", payload) for n in range(1, batch + 1)]
        conn.cursor().executemany(stmt.insert_entry, rows)
        state["head"] = head + batch

    def check(conn: Any) -> None:
        if conn.execute(stmt.anchor, (root,)).fetchone() is None:
            raise RuntimeError(f"baseline anchor {root} missing")
        revision = conn.execute(stmt.root_revision, (root,)).fetchone()
        head = conn.execute(stmt.head, (root,)).fetchone()
        active = conn.execute(stmt.active_rows, (root, stmt.active_true)).fetchone()
        if revision != (0,) or head != (CHECK_ENTRIES,) or active is not None:
            raise RuntimeError(f"baseline check of {root} failed: {revision} {head} {active}")

    bodies: dict[str, Callable[[Any], None]] = {
        "insert": insert,
        "replace": replace,
        "append": append,
        "check": check,
    }
    body = bodies[op]
    done = {"ops": 0}

    def step() -> bool:
        if done["ops"] >= capacity:
            return False
        transaction(body)
        done["ops"] += 1
        return True

    return step


# --------------------------------------------------------------------------- SQLite


def sqlite_connect(path: Path) -> sqlite3.Connection:
    """A connection with the storage backend's settings: WAL, ``synchronous=FULL``, 30 s busy."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def _sqlite_transaction(conn: sqlite3.Connection) -> Transaction:
    def run(body: Callable[[Any], object]) -> object:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    return run


@contextmanager
def raw_sqlite(path: Path, work: RawWork, threads: int) -> Iterator[list[Step]]:
    """A fresh baseline file and one connection (and step) per thread."""
    connections: list[sqlite3.Connection] = []
    try:
        for _ in range(threads):
            connections.append(sqlite_connect(path))
        for statement in _SQLITE_DDL:
            connections[0].execute(statement)
        stmt = _Sql("?", "", postgres=False)
        transactions = [_sqlite_transaction(conn) for conn in connections]
        yield _steps(work, stmt, transactions)
    finally:
        for conn in connections:
            conn.close()


def sqlite_settings(conn: sqlite3.Connection) -> str:
    """``journal_mode`` and ``synchronous`` of a connection."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    level = conn.execute("PRAGMA synchronous").fetchone()[0]
    return f"journal_mode={mode}, synchronous={_SYNCHRONOUS.get(level, level)}"


_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


# --------------------------------------------------------------------------- PostgreSQL

PgConnection = psycopg.Connection[tuple[Any, ...]]


def _pg_transaction(conn: PgConnection) -> Transaction:
    def run(body: Callable[[Any], object]) -> object:
        with conn.transaction():
            return body(conn)

    return run


@contextmanager
def raw_postgres(schema: str, work: RawWork, threads: int) -> Iterator[list[Step]]:
    """The baseline tables in ``schema`` and one autocommit connection (and step) per thread."""
    connections: list[PgConnection] = []
    prefix = sql.Identifier(schema).as_string(None) + "."
    try:
        for _ in range(threads):
            connections.append(psycopg.connect(PG_URL, autocommit=True, connect_timeout=5))
        for statement in _PG_DDL:
            connections[0].execute(statement.replace("{s}", prefix[:-1]))
        stmt = _Sql("%s", prefix, postgres=True)
        transactions = [_pg_transaction(conn) for conn in connections]
        yield _steps(work, stmt, transactions)
    finally:
        for conn in connections:
            conn.close()


def pg_settings(conn: Any) -> str:
    """``synchronous_commit``, ``fsync`` and the isolation level seen by a connection."""
    row = conn.execute(
        "SELECT current_setting('synchronous_commit'), current_setting('fsync'), "
        "current_setting('transaction_isolation')"
    ).fetchone()
    return f"synchronous_commit={row[0]}, fsync={row[1]}, isolation={row[2]}"
