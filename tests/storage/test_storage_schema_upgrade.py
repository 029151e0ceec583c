"""Storage schema versions: older stores upgrade in place (version 2: PostgreSQL's
transaction ids; version 3: SQLite's log keyed by its notification id; partial scan indexes),
later versions are refused, and the in-memory log records every write and forgets
rolled-back ones."""

from __future__ import annotations

import base64
import json
import re
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import psycopg
import pytest

from nenjim.infrastructure.memory.storage import InMemoryBackend, InMemoryDriver
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.storage import DurableRecord, Resource
from nenjim.infrastructure.storage.audit import audit_backend, audit_store
from nenjim.infrastructure.storage.follow.log import START, StoredEvent, read_after
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.records import scan_statement
from nenjim.infrastructure.storage.testing.resources import CONTENT_BLOBS
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.versions import STORAGE_SCHEMA_VERSION, IncompatibleStoreError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "storage.db"
NOTES = Resource("notes", "records")
_V1 = {"canonicalization_version": 1}


def versions(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as connection:
        return dict(connection.execute("SELECT component, version FROM nenjim_schema"))


def test_a_version_1_sqlite_store_opens_and_is_upgraded_in_place(tmp_path: Path) -> None:
    copy = tmp_path / "storage.db"
    shutil.copy(FIXTURE, copy)
    assert versions(copy)["storage"] == 1
    backend = open_backend(f"sqlite://{copy}", CATALOG)
    try:
        driver = backend.driver
        assert isinstance(driver, SqlDriver)
        with driver.transaction(None) as session:
            events = read_after(session, START, 10_000)
    finally:
        backend.close()
    assert [event.position.notification_id for event in events] == list(range(1, len(events) + 1))
    assert versions(copy) == {"storage": STORAGE_SCHEMA_VERSION, "storage.events": 1}


def _log(path: Path) -> tuple[str, list[tuple[object, ...]], list[str]]:
    """The log table's definition, its rows in id order, and the names of its indexes."""
    with sqlite3.connect(path) as connection:
        (definition,) = connection.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'storage_events'"
        ).fetchone()
        rows = connection.execute(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM storage_events ORDER BY notification_id"
        ).fetchall()
        indexes = [
            str(name)
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' "
                "AND tbl_name = 'storage_events' ORDER BY name"
            )
        ]
    return str(definition), rows, indexes


@pytest.mark.parametrize("found", [1, 2])
def test_an_older_sqlite_log_is_rekeyed_by_its_notification_id_on_open(
    tmp_path: Path, found: int
) -> None:
    copy = tmp_path / "storage.db"
    shutil.copy(FIXTURE, copy)
    with sqlite3.connect(copy) as connection:
        connection.execute(
            "UPDATE nenjim_schema SET version = ? WHERE component = 'storage'", (found,)
        )
    definition, rows, indexes = _log(copy)
    assert "notification_id INTEGER NOT NULL" in definition
    assert indexes == ["sqlite_autoindex_storage_events_1", "storage_events_notification_id"]
    backend = open_backend(f"sqlite://{copy}", CATALOG)
    try:
        # Written after the upgrade: the next id, and a lost race still refused.
        backend.view.records("workflow.states").insert(
            key="after-upgrade", revision=0, attributes={}, record=_record()
        )
    finally:
        backend.close()
    upgraded, rows_after, indexes_after = _log(copy)
    assert "notification_id INTEGER PRIMARY KEY" in upgraded
    assert "UNIQUE (originator_id, originator_version)" in upgraded
    assert indexes_after == ["sqlite_autoindex_storage_events_1"]
    assert rows_after[: len(rows)] == rows
    assert [row[0] for row in rows_after] == list(range(1, len(rows) + 2))
    assert versions(copy)["storage"] == STORAGE_SCHEMA_VERSION
    assert audit_store(f"sqlite://{copy}", CATALOG).ok
    with sqlite3.connect(copy) as connection, pytest.raises(sqlite3.IntegrityError):
        connection.execute(
            "INSERT INTO storage_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, 'x', x'')",
            rows[0][1:3],
        )


def test_an_upgrade_that_fails_leaves_the_older_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "storage.db"
    shutil.copy(FIXTURE, copy)
    before = _log(copy)
    rekey = SQLiteDialect.upgrade_tables

    def rekey_then_fail(dialect: SQLiteDialect, found: int) -> list[str]:
        # Every statement of the upgrade runs, then the transaction fails.
        return [*rekey(dialect, found), "INSERT INTO no_such_table VALUES (1)"]

    monkeypatch.setattr(SQLiteDialect, "upgrade_tables", rekey_then_fail)
    with pytest.raises(StoreUnavailableError, match=r"cannot open SQLite database .*no_such_table"):
        open_backend(f"sqlite://{copy}", CATALOG)
    assert _log(copy) == before
    assert versions(copy)["storage"] == 1
    monkeypatch.undo()
    open_backend(f"sqlite://{copy}", CATALOG).close()
    upgraded, rows, _ = _log(copy)
    assert "notification_id INTEGER PRIMARY KEY" in upgraded
    assert rows == before[1]


def _scan_indexes(path: Path) -> tuple[list[str], list[str]]:
    """The scan indexes in the file, and those its generated-index table records."""
    with sqlite3.connect(path) as connection:
        present = [
            str(name)
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name"
            )
            if not str(name).startswith(("storage_u_", "sqlite_", "storage_events"))
            and str(name).startswith("storage_")
        ]
        recorded = [
            str(name)
            for (name,) in connection.execute(
                "SELECT index_name FROM storage_generated_indexes ORDER BY index_name"
            )
            if not str(name).startswith("storage_u_")
        ]
    return present, recorded


def test_an_earlier_builds_scan_indexes_are_replaced_by_partial_ones_on_open(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "storage.db"
    shutil.copy(FIXTURE, copy)
    url = f"sqlite://{copy}"
    before, _ = _scan_indexes(copy)
    assert len(before) == 4
    assert all(name.startswith("storage_i_") for name in before)
    assert audit_store(url, CATALOG).ok  # until an open replaces them, they serve
    open_backend(url, CATALOG).close()
    present, recorded = _scan_indexes(copy)
    assert present == recorded
    assert len(present) == 4
    assert all(name.startswith("storage_s_") for name in present)
    with sqlite3.connect(copy) as connection:
        for (sql,) in connection.execute(
            "SELECT sql FROM sqlite_master WHERE name GLOB 'storage_s_*'"
        ):
            assert re.search(r"WHERE resource = '(agent|team)\.executions'$", sql), sql
    assert audit_store(url, CATALOG).ok


def test_a_store_of_a_later_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    later = STORAGE_SCHEMA_VERSION + 1
    open_backend(f"sqlite://{path}", [NOTES]).close()
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE nenjim_schema SET version = ? WHERE component = 'storage'", (later,)
        )
    with pytest.raises(IncompatibleStoreError) as refused:
        open_backend(f"sqlite://{path}", [NOTES])
    message = str(refused.value)
    assert message == (
        f"SQLite database {path} holds nenjim storage of schema version {later}; this build "
        f"reads versions 1 to {STORAGE_SCHEMA_VERSION} only. Use a matching nenjim release or "
        "a new database."
    )
    assert versions(path)["storage"] == later


def test_a_version_4_store_keeps_its_blobs_bytes_and_new_blobs_keep_theirs_once(
    tmp_path: Path,
) -> None:
    """Version 5 changed no table: a version 4 store's blob rows hold their bytes and are
    read from them; a blob put after the upgrade keeps its bytes in its event only."""
    path = tmp_path / "s.db"
    backend = open_backend(f"sqlite://{path}", [CONTENT_BLOBS])
    backend.view.blobs(CONTENT_BLOBS).put_if_absent(key="old", data=b"old bytes", attributes=_V1)
    backend.close()
    old_state = {
        "resource": CONTENT_BLOBS.id,
        "key": "old",
        "attributes": _V1,
        "data": base64.b64encode(b"old bytes").decode(),
    }
    with sqlite3.connect(path) as connection:  # back to how version 4 stored it
        connection.execute("UPDATE nenjim_schema SET version = 4 WHERE component = 'storage'")
        connection.execute("UPDATE storage_blobs SET data = ? WHERE key = 'old'", (b"old bytes",))
        connection.execute(
            "UPDATE storage_events SET state = ? WHERE originator_id = ?",
            (json.dumps(old_state).encode(), str(events.blob_stream(CONTENT_BLOBS.id, "old"))),
        )
    backend = open_backend(f"sqlite://{path}", [CONTENT_BLOBS])
    try:
        blobs = backend.view.blobs(CONTENT_BLOBS)
        blobs.put_if_absent(key="new", data=b"new bytes", attributes=_V1)
        assert [blobs.fetch(key).data for key in ("old", "new")] == [b"old bytes", b"new bytes"]
        assert audit_backend(backend).ok
    finally:
        backend.close()
    assert versions(path)["storage"] == STORAGE_SCHEMA_VERSION
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT key, data FROM storage_blobs ORDER BY key").fetchall()
    assert rows == [("new", b""), ("old", b"old bytes")]


def test_a_version_1_postgres_store_gets_transaction_ids_and_old_rows_come_first(
    postgres_schema_url: str,
) -> None:
    backend = open_backend(postgres_schema_url, [NOTES])
    for key in ("a", "b"):
        backend.view.records(NOTES).insert(key=key, revision=0, attributes={}, record=_record())
    backend.close()
    schema = postgres_schema_url.split("schema=")[1].split("&", maxsplit=1)[0]
    base = postgres_schema_url.split("?", maxsplit=1)[0]
    with psycopg.connect(base, autocommit=True) as connection:  # back to what version 1 had
        connection.execute(f'DROP TRIGGER storage_events_notify ON "{schema}".storage_events')
        connection.execute(f'ALTER TABLE "{schema}".storage_events DROP COLUMN transaction_id')
        connection.execute(
            f"UPDATE \"{schema}\".nenjim_schema SET version = 1 WHERE component = 'storage'"
        )
    backend = open_backend(postgres_schema_url, [NOTES])
    try:
        backend.view.records(NOTES).insert(key="c", revision=0, attributes={}, record=_record())
        driver = backend.driver
        assert isinstance(driver, SqlDriver)
        deadline = time.monotonic() + 30
        events: list[StoredEvent] = []
        while len(events) < 3 and time.monotonic() < deadline:
            # Final once every older transaction on the server has ended.
            with driver.transaction(None) as session:
                events = read_after(session, START, 100)
                version = session.one("SELECT version FROM {versions} WHERE component = 'storage'")
    finally:
        backend.close()
    assert version == (STORAGE_SCHEMA_VERSION,)
    assert [(e.position.transaction == 0, e.position.notification_id) for e in events] == [
        (True, 1),
        (True, 2),
        (False, 3),
    ]


def test_the_in_memory_log_records_writes_and_forgets_rolled_back_ones() -> None:
    backend = InMemoryBackend([NOTES])
    records = backend.view.records(NOTES)
    records.insert(key="a", revision=0, attributes={}, record=_record())

    def write_then_fail() -> None:
        with backend.transaction() as view:
            view.records(NOTES).insert(key="b", revision=0, attributes={}, record=_record())
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        write_then_fail()
    records.delete(key="a")
    driver = backend.driver
    assert isinstance(driver, InMemoryDriver)
    logged = driver.log_after(0, 10)
    assert [(number, topic.split(":")[1], state["key"]) for number, topic, state in logged] == [
        (1, "RecordInserted", "a"),
        (2, "RecordDeleted", "a"),
    ]


def _record() -> DurableRecord:
    return DurableRecord("test.note", "0.1", {"text": "x"})


def test_opening_a_current_postgresql_store_does_not_wait_for_a_writer(
    postgres_schema_url: str,
) -> None:
    """An opener of a store already at this build's schema runs no DDL. A ``CREATE INDEX IF
    NOT EXISTS`` locks its table before it looks, so an opener waited for every open writer
    and could deadlock with one (two processes admitting runs for one Agent did)."""
    first = open_backend(postgres_schema_url, [NOTES])
    opened = threading.Event()

    def open_second() -> None:
        open_backend(postgres_schema_url, [NOTES]).close()
        opened.set()

    try:
        with first.transaction() as view:
            view.records(NOTES).insert(
                key="held", revision=1, attributes={}, record=DurableRecord("note", "1.0", {"t": 1})
            )
            opener = threading.Thread(target=open_second, daemon=True)
            opener.start()
            # Generous: a hang is what this detects, not a speed.
            opened_while_writing = opened.wait(30)
        opener.join(30)
    finally:
        first.close()
    assert opened_while_writing
    assert opened.is_set()


def _runs(*, sparse: bool) -> Resource:
    """A records resource whose ``run`` index is sparse or full."""
    return Resource(
        "upgrade.runs",
        "records",
        attributes={"run": "nullable_string"},
        indexes={"run": ("run",)},
        sparse_indexes=("run",) if sparse else (),
    )


def _run_index(url: str, resource: Resource) -> tuple[str, str]:
    """The generated scan index of ``resource`` in the store at ``url``: its name and its
    definition as the database keeps it."""
    backend = open_backend(url, [resource])
    try:
        driver = backend.driver
        assert isinstance(driver, SqlDriver)
        with driver.transaction(None) as session:
            names = session.all(
                "SELECT index_name FROM {generated} WHERE resource = ?", (resource.id,)
            )
            assert len(names) == 1, names
            name = str(names[0][0])
            if isinstance(driver.dialect, SQLiteDialect):
                found = session.one("SELECT sql FROM sqlite_master WHERE name = ?", (name,))
            else:
                found = session.one("SELECT indexdef FROM pg_indexes WHERE indexname = ?", (name,))
            assert found is not None, name
        return name, str(found[0])
    finally:
        backend.close()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_an_index_made_sparse_is_replaced_on_open_and_back_again(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A store opened with an index declared full, then sparse, then full again, ends each
    open with exactly the declared index, and every scan answers alike throughout."""
    url = (
        f"sqlite://{tmp_path / 'runs.db'}"
        if store == "sqlite"
        else request.getfixturevalue("postgres_schema_url")
    )
    full, sparse = _runs(sparse=False), _runs(sparse=True)
    backend = open_backend(url, [full])
    try:
        for key, run in (("a", None), ("b", "r1"), ("c", None)):
            backend.view.records(full).insert(
                key=key, revision=0, attributes={"run": run}, record=_record()
            )
    finally:
        backend.close()
    full_name, full_sql = _run_index(url, full)
    # Until an open by this build replaces it, the full index serves the sparse one's scans.
    assert audit_store(url, [sparse]).ok
    sparse_name, sparse_sql = _run_index(url, sparse)
    assert sparse_name != full_name
    assert "IS NOT NULL" not in full_sql
    assert re.search(r"IS NOT NULL\)*$", sparse_sql), sparse_sql
    for resource in (sparse, full, sparse):
        backend = open_backend(url, [resource])
        try:
            rows = backend.view.records(resource)
            assert [e.key for e in rows.scan(index="run", equals={"run": None})] == ["a", "c"]
            assert [e.key for e in rows.scan(index="run", equals={"run": "r1"})] == ["b"]
        finally:
            backend.close()
        assert audit_store(url, [resource]).ok
    assert _run_index(url, sparse)[0] == sparse_name


def test_a_postgresql_scan_of_a_value_reads_the_sparse_index(postgres_schema_url: str) -> None:
    """The planner proves a sparse index's predicate from the scan's equality with a value,
    on the generic plan a prepared statement ends with."""
    resource = _runs(sparse=True)
    name, _ = _run_index(postgres_schema_url, resource)
    backend = open_backend(postgres_schema_url, [resource])
    try:
        rows = backend.view.records(resource)
        for number in range(300):
            run = None if number % 10 else f"r{number}"
            rows.insert(key=f"k{number:03}", revision=0, attributes={"run": run}, record=_record())
        driver = backend.driver
        assert isinstance(driver, SqlDriver)
        with driver.transaction(None) as session:
            session.execute("ANALYZE {records}")
            session.execute("SET LOCAL enable_seqscan = off")
            session.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            # The very statement a scan for a value sends.
            query, params = scan_statement(
                session, driver.layout, resource, {"run": "r10"}, after=None, limit=None
            )
            plan = " ".join(str(row[0]) for row in session.all("EXPLAIN " + query, params))
    finally:
        backend.close()
    assert name in plan, plan
