"""Faults and schema on the SQL backends: raw driver errors, the database's own unique
indexes, corrupt rows, schema versions, generated indexes, and opening by URL."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from nenjim.infrastructure.log import StoreUnavailableError
from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage import (
    Backend,
    ConditionFailedError,
    ConflictError,
    DurableRecord,
    GuardRef,
    NoRows,
    Resource,
    SerializationError,
    StorageError,
    TransactionError,
    UniqueConstraintError,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.audit import audit_backend
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events, records
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    EXECUTIONS_ID,
    FIXTURE_RESOURCES,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    roots_resource,
)
from nenjim.infrastructure.store.versions import IncompatibleStoreError

OTHER_OWNER = "owner-2"
TIMEOUT = 20.0


@pytest.fixture
def backend(durable_store_url: str) -> Iterator[Backend]:
    """A backend with the owner's root."""
    opened = _open(durable_store_url)
    yield opened
    opened.close()


@pytest.fixture
def pg_backend(postgres_schema_url: str) -> Iterator[Backend]:
    """A PostgreSQL backend with the roots of two owners."""
    opened = _open(postgres_schema_url)
    opened.view.records(ROOTS).insert(key=OTHER_OWNER, revision=0, attributes={}, record=_record())
    yield opened
    opened.close()


def _open(url: str, resources: Sequence[Resource] = FIXTURE_RESOURCES) -> Backend:
    opened = open_backend(url, resources)
    if opened.view.records(ROOTS.id).read(OWNER) is None:
        opened.view.records(ROOTS.id).insert(key=OWNER, revision=0, attributes={}, record=_record())
    return opened


def _record(value: str = "v") -> DurableRecord:
    return DurableRecord("test.faults", "0.1", {"value": value})


def _run(backend: Backend, template: str, params: Sequence[object] = ()) -> list[Any]:
    """Run SQL through the backend's own session (its dialect's tables and placeholders)."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        if template.lstrip().upper().startswith("SELECT"):
            return session.all(template, params)
        session.execute(template, params)
        return []


def _backend_pid(backend: Backend) -> int:
    scope = backend.current_scope()
    assert scope is not None
    pid: int = scope.context.connection.info.backend_pid
    return pid


def _terminate(postgres_url: str, pid: int) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + TIMEOUT
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, f"backend {pid} did not terminate"
            time.sleep(0.01)


def _active(key: str, owner: str = OWNER, *, active: bool = True) -> dict[str, Any]:
    return {
        "key": key,
        "revision": 0,
        "attributes": {"owner": owner, "active": active},
        "record": _record(key),
    }


# dropped connections, deadlocks, busy databases: raw driver errors --------------


def test_connection_killed_mid_transaction_surfaces_raw_and_the_next_transaction_works(
    pg_backend: Backend, postgres_url: str
) -> None:
    backend = pg_backend

    def write_while_the_connection_dies() -> None:
        with backend.transaction() as view:
            view.records(WORKFLOW_STATES).insert(
                key="partial", revision=1, attributes={}, record=_record()
            )
            _terminate(postgres_url, _backend_pid(backend))
            view.records(WORKFLOW_STATES).read("partial")

    with pytest.raises(psycopg.OperationalError) as raised:
        write_while_the_connection_dies()
    assert not isinstance(raised.value, StorageError)

    records_view = backend.view.records(WORKFLOW_STATES)
    assert records_view.read("partial") is None
    logged = _run(
        backend,
        "SELECT count(*) FROM {events} WHERE originator_id = ?",
        (events.record_stream(WORKFLOW_STATES.id, "partial"),),
    )
    assert logged[0][0] == 0
    records_view.insert(key="after", revision=1, attributes={}, record=_record())
    assert records_view.fetch("after").revision == 1


def test_pool_replaces_an_idle_connection_that_was_dropped(
    pg_backend: Backend, postgres_url: str
) -> None:
    backend = pg_backend
    with backend.transaction():
        idle = _backend_pid(backend)
    _terminate(postgres_url, idle)
    with backend.transaction() as view:
        assert _backend_pid(backend) != idle
        view.records(WORKFLOW_STATES).insert(key="wf", revision=1, attributes={}, record=_record())
    assert backend.view.records(WORKFLOW_STATES).fetch("wf").revision == 1


def test_opposite_order_guard_locks_deadlock_as_a_raw_database_error(pg_backend: Backend) -> None:
    backend = pg_backend
    both_locked = threading.Barrier(2, timeout=TIMEOUT)
    outcomes: dict[str, BaseException | None] = {}

    def lock(name: str, first: str, second: str) -> None:
        try:
            with backend.transaction() as view:
                view.check(guards=[GuardRef(ROOTS, first)], conditions=[])
                both_locked.wait()
                view.check(guards=[GuardRef(ROOTS, second)], conditions=[])
            outcomes[name] = None
        except Exception as error:  # checked by the test thread
            outcomes[name] = error

    threads = [
        threading.Thread(target=lock, args=("a", OWNER, OTHER_OWNER)),
        threading.Thread(target=lock, args=("b", OTHER_OWNER, OWNER)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a locking thread hung"
    errors = [error for error in outcomes.values() if error is not None]
    assert len(errors) == 1
    assert isinstance(errors[0], psycopg.errors.DeadlockDetected)
    assert not isinstance(errors[0], StorageError)
    assert list(outcomes.values()).count(None) == 1


def test_sqlite_busy_database_is_a_raw_operational_error(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    backend = SQLiteBackend(FIXTURE_RESOURCES, path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="locked") as raised:
            backend.view.records(WORKFLOW_STATES).insert(
                key="wf", revision=1, attributes={}, record=_record()
            )
        assert not isinstance(raised.value, StorageError)
        blocker.execute("ROLLBACK")
        backend.view.records(WORKFLOW_STATES).insert(
            key="wf", revision=1, attributes={}, record=_record()
        )
        assert backend.view.records(WORKFLOW_STATES).fetch("wf").revision == 1
    finally:
        blocker.close()
        backend.close()


# the database's own unique indexes ----------------------------------------------


def test_generated_unique_index_refuses_what_the_pre_check_did_not_see(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    executions = backend.view.records(EXECUTIONS)
    executions.insert(**_active("winner"))
    executions.insert(**_active("sleeper", active=False))
    monkeypatch.setattr(records, "_send_unique", lambda *_: [])

    with pytest.raises(UniqueConstraintError) as inserted:
        executions.insert(**_active("racer"))
    with pytest.raises(UniqueConstraintError) as replaced:
        executions.replace(
            key="sleeper",
            expected_revision=0,
            next_revision=1,
            attributes={"owner": OWNER, "active": True},
            record=_record(),
        )
    for error in (inserted.value, replaced.value):
        assert (error.resource, error.constraint) == (EXECUTIONS_ID, "one_active_owner")
        assert isinstance(error.__cause__, sqlite3.IntegrityError | psycopg.errors.UniqueViolation)
    assert executions.read("racer") is None
    assert executions.fetch("sleeper").revision == 0
    # Inactive rows and other owners are outside the partial index.
    executions.insert(**_active("also-sleeping", active=False))


def test_a_duplicate_key_is_a_conflict_not_a_unique_violation(backend: Backend) -> None:
    executions = backend.view.records(EXECUTIONS)
    executions.insert(**_active("run", active=False))
    with pytest.raises(ConflictError) as raised:
        executions.insert(**_active("run", active=False))
    assert not isinstance(raised.value, UniqueConstraintError)


def test_a_replace_whose_log_version_is_taken_conflicts_and_writes_nothing(
    backend: Backend,
) -> None:
    # The event and the row go in together (one statement on PostgreSQL): when the
    # log already holds the next version, neither is written.
    executions = backend.view.records(EXECUTIONS)
    executions.insert(**_active("run", active=False))
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        stream = events.record_stream(EXECUTIONS_ID, "run")
        assert events.append(scope.context, stream, 2, "test.planted", "{}")
    with pytest.raises(ConflictError, match=f"^record revision conflict: {EXECUTIONS_ID}/run "):
        executions.replace(
            key="run",
            expected_revision=0,
            next_revision=1,
            attributes={"owner": OWNER, "active": True},
            record=_record("next"),
        )
    stored = executions.fetch("run")
    assert (stored.revision, stored.attributes["active"]) == (0, False)
    assert [entry.revision for entry in executions.history("run")] == [0]


# rows the resource would not accept --------------------------------------------


def test_corrupt_stored_rows_are_serialization_errors_that_fail_the_scope(
    backend: Backend, durable_store_url: str
) -> None:
    executions = backend.view.records(EXECUTIONS)
    executions.insert(**_active("bad-type"))
    executions.insert(**_active("bad-payload", active=False))
    json_param = "CAST(? AS jsonb)" if durable_store_url.startswith("postgresql") else "?"
    _run(
        backend,
        "UPDATE {records} SET attributes = " + json_param + " WHERE resource = ? AND key = ?",
        ('{"owner": "owner-1", "active": 1}', EXECUTIONS_ID, "bad-type"),
    )
    _run(
        backend,
        "UPDATE {records} SET payload = ? WHERE resource = ? AND key = ?",
        ("{not json", EXECUTIONS_ID, "bad-payload"),
    )
    with pytest.raises(SerializationError):
        executions.read("bad-type")
    with pytest.raises(SerializationError):
        executions.read("bad-payload")

    def read_on_after_a_decode_failure() -> None:
        with backend.transaction() as view:
            with pytest.raises(SerializationError):
                view.records(EXECUTIONS).scan(index="owner", equals={"owner": OWNER})
            view.records(EXECUTIONS).read("bad-type")

    with pytest.raises(TransactionError):
        read_on_after_a_decode_failure()


@pytest.mark.parametrize(
    "stored",
    ["{not json", "[" * 100_000 + "]" * 100_000],
    ids=["not JSON", "nested too deep"],
)
def test_sqlite_json_columns_that_do_not_parse_are_serialization_errors(
    tmp_path: Path, stored: str
) -> None:
    backend = _open(f"sqlite://{tmp_path / 'storage.db'}")
    try:
        executions = backend.view.records(EXECUTIONS)
        executions.insert(**_active("run"))
        backend.view.blobs(CONTENT_BLOBS).put_if_absent(
            key="blob", data=b"x", attributes={"canonicalization_version": 1}
        )
        # (SQLite itself refuses such attributes in storage_records: its indexes parse them.)
        _run(backend, "UPDATE {blobs} SET attributes = ? WHERE key = ?", (stored, "blob"))
        _run(
            backend,
            "UPDATE {events} SET state = ? WHERE originator_id = ?",
            (stored.encode(), str(events.record_stream(EXECUTIONS_ID, "run"))),
        )
        with pytest.raises(SerializationError):
            backend.view.blobs(CONTENT_BLOBS).fetch("blob")
        with pytest.raises(SerializationError):
            executions.history("run")
    finally:
        backend.close()


# schema ------------------------------------------------------------------------


def _generated(backend: Backend) -> set[str]:
    return {row[0] for row in _run(backend, "SELECT index_name FROM {generated}")}


def test_reopening_is_idempotent_and_keeps_the_data(durable_store_url: str) -> None:
    first = _open(durable_store_url)
    first.view.records(EXECUTIONS).insert(**_active("run"))
    indexes = _generated(first)
    first.close()
    again = _open(durable_store_url)
    try:
        assert again.view.records(EXECUTIONS).fetch("run").attributes["active"] is True
        assert _generated(again) == indexes
        assert len(indexes) == 6  # executions and inventory: 2 scan indexes, 1 unique each
    finally:
        again.close()


def test_another_schema_version_is_refused(durable_store_url: str) -> None:
    first = _open(durable_store_url)
    _run(first, "UPDATE {versions} SET version = ? WHERE component = ?", (99, "storage"))
    first.close()
    with pytest.raises(IncompatibleStoreError) as raised:
        open_backend(durable_store_url, FIXTURE_RESOURCES)
    assert raised.value.found == 99


def _index_definitions(backend: Backend) -> dict[str, str]:
    """Every generated index's name and its definition as the database reports it."""
    names = sorted(_generated(backend))
    if isinstance(backend, SQLiteBackend):
        query = "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name = ?"
        return {name: str(_run(backend, query, (name,))[0][1]) for name in names}
    # Other tests' schemas hold indexes of the same names (and may be dropped meanwhile).
    assert isinstance(backend, PostgresBackend)
    query = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = ? AND indexname = ?"
    return {name: str(_run(backend, query, (backend.schema, name))[0][1]) for name in names}


def test_a_scan_index_holds_only_the_rows_of_its_own_resource(durable_store_url: str) -> None:
    backend = _open(durable_store_url)
    try:
        workflows = backend.view.records(WORKFLOW_STATES)
        for n in range(5):
            workflows.insert(key=f"wf-{n}", revision=0, attributes={}, record=_record())
        backend.view.records(ROOTS).insert(
            key=OTHER_OWNER, revision=0, attributes={}, record=_record()
        )
        executions = backend.view.records(EXECUTIONS)
        for key, owner in (("b", OWNER), ("a", OWNER), ("c", OTHER_OWNER)):
            executions.insert(**_active(key, owner, active=False))
        scans = {
            name: definition
            for name, definition in _index_definitions(backend).items()
            if name.startswith("storage_s_")
        }
        assert len(scans) == 4  # executions and inventory: 2 scan indexes each
        for name, definition in scans.items():
            resource = "agent.executions" if "agent_executions" in name else "inventory.items"
            assert re.search(rf"WHERE \(?resource = '{re.escape(resource)}'", definition), (
                definition
            )
        if isinstance(backend, SQLiteBackend):
            # The index's own entries: the executions, none of the workflows or the root.
            for name in scans:
                if "agent_executions" in name:
                    (cells,) = _run(
                        backend,
                        "SELECT sum(ncell) FROM dbstat WHERE name = ? AND pagetype = 'leaf'",
                        (name,),
                    )
                    assert cells == (3,)
        found = executions.scan(index="owner", equals={"owner": OWNER})
        assert [entry.key for entry in found] == ["a", "b"]
        # NoRows answers from the owner_active index: a row there fails the condition.
        ok = backend.view.check(
            guards=[GuardRef(ROOTS.id, OWNER)],
            conditions=[NoRows(EXECUTIONS, "owner_active", {"owner": OWNER, "active": True})],
        )
        assert ok
        with pytest.raises(ConditionFailedError):
            backend.view.check(
                guards=[GuardRef(ROOTS.id, OTHER_OWNER)],
                conditions=[
                    NoRows(EXECUTIONS, "owner_active", {"owner": OTHER_OWNER, "active": False})
                ],
            )
        executions.delete_matching(index="owner", equals={"owner": OWNER})
        assert [
            entry.key for entry in executions.scan(index="owner", equals={"owner": OWNER})
        ] == []
    finally:
        backend.close()


def test_a_resource_id_with_quotes_placeholders_and_braces_scans_through_its_index(
    durable_store_url: str,
) -> None:
    # Scans name their resource as a literal in the statement's text: a resource id may
    # hold what SQL, the placeholder rewrite, psycopg or a template would take for theirs.
    odd = Resource(
        "odd%s?'{items}\\é.x",
        "records",
        attributes={"owner": "string", "active": "boolean"},
        indexes={"owner": ("owner",), "owner_active": ("owner", "active")},
    )
    backend = open_backend(durable_store_url, [odd])
    try:
        rows = backend.view.records(odd)
        for key, owner, active in (("b", "o1", True), ("a", "o1", False), ("c", "o2", True)):
            rows.insert(
                key=key, revision=0, attributes={"owner": owner, "active": active}, record=_record()
            )
        assert [e.key for e in rows.scan(index="owner", equals={"owner": "o1"})] == ["a", "b"]
        found = rows.scan(index="owner_active", equals={"owner": "o1", "active": True})
        assert [e.key for e in found] == ["b"]
        assert backend.view.check(
            guards=[], conditions=[NoRows(odd, "owner_active", {"owner": "o3", "active": True})]
        )
        rows.delete_matching(index="owner", equals={"owner": "o1"})
        assert [e.key for e in rows.scan(index="owner", equals={"owner": "o2"})] == ["c"]
        assert rows.read("a") is None
    finally:
        backend.close()


def test_a_changed_constraint_replaces_its_generated_index(durable_store_url: str) -> None:
    first = _open(durable_store_url)
    before = _generated(first)
    first.close()
    # one_active_owner becomes unconditional: one execution per owner at all.
    stricter = Resource(
        EXECUTIONS_ID,
        "records",
        attributes={"owner": "string", "active": "boolean"},
        immutable_attributes=("owner",),
        indexes={"owner": ("owner",), "owner_active": ("owner", "active")},
        unique=({"name": "one_active_owner", "fields": ("owner",), "where": {}},),
        guard={"resource": ROOTS.id, "via": "owner"},
    )
    roots = roots_resource()
    again = _open(durable_store_url, [roots, stricter])
    try:
        after = _generated(again)
        assert len(after - before) == 1
        assert len(before - after) == 1
        (dropped,) = before - after
        assert dropped.startswith("storage_u_agent_executions_one_active_owner")
        executions = again.view.records(stricter)
        executions.insert(**_active("first", active=False))
        with pytest.raises(UniqueConstraintError):
            executions.insert(**_active("second", active=False))
    finally:
        again.close()


def test_odd_attribute_names_are_indexed_reopened_and_audited(durable_store_url: str) -> None:
    """Attribute names that are not SQL identifiers (once refused when a SQL store
    opened) are indexed and constrained; the store opens again on the same indexes (an
    SQLite scan names the index it reads, an error if the index could not serve it), and
    its audit is clean."""

    def odd() -> Resource:
        return Resource(
            "odd.items",
            "records",
            attributes={"owner-id": "string", "ö {x} ?%s": "nullable_integer", "it's": "string"},
            immutable_attributes=("it's",),
            indexes={"by owner-id": ("owner-id",), "by ö": ("ö {x} ?%s",)},
            unique=({"name": "one ö", "fields": ("ö {x} ?%s",), "where": {"it's": "y's"}},),
        )

    first = open_backend(durable_store_url, [odd()])
    try:
        rows = first.view.records("odd.items")
        attributes = {"owner-id": "o", "ö {x} ?%s": 1, "it's": "y's"}
        rows.insert(key="k", revision=0, attributes=attributes, record=_record())
        with pytest.raises(UniqueConstraintError):
            rows.insert(key="k2", revision=0, attributes=attributes, record=_record())
    finally:
        first.close()
    again = open_backend(durable_store_url, [odd()])
    try:
        rows = again.view.records("odd.items")
        (found,) = rows.scan(index="by ö", equals={"ö {x} ?%s": 1})
        assert dict(found.attributes) == attributes
        assert [e.key for e in rows.scan(index="by owner-id", equals={"owner-id": "o"})] == ["k"]
        assert audit_backend(again).ok
    finally:
        again.close()


# opening by URL ------------------------------------------------------------------


def test_open_backend_by_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_schema_url: str
) -> None:
    assert isinstance(open_backend("memory:", FIXTURE_RESOURCES), InMemoryBackend)
    monkeypatch.chdir(tmp_path)
    relative = open_backend("sqlite:relative.db", FIXTURE_RESOURCES)
    absolute = open_backend(f"sqlite://{tmp_path / 'absolute.db'}", FIXTURE_RESOURCES)
    postgres = open_backend(postgres_schema_url, FIXTURE_RESOURCES)
    try:
        assert isinstance(relative, SQLiteBackend)
        assert relative.path == tmp_path / "relative.db"
        assert isinstance(absolute, SQLiteBackend)
        assert absolute.path == tmp_path / "absolute.db"
        assert isinstance(postgres, PostgresBackend)
        assert f"schema={postgres.schema}&" in postgres_schema_url
        for backend in (relative, absolute, postgres):
            assert backend.resources["agent.roots"] is ROOTS
    finally:
        for each in (relative, absolute, postgres):
            each.close()


@pytest.mark.parametrize(
    "url",
    [
        "mysql://localhost/db",
        "sqlite://relative-with-two-slashes.db",
        "postgresql://localhost/",
        "postgresql://localhost/db?no_such_libpq_option=1",
        "postgresql://localhost/db?pool_size=zero",
    ],
)
def test_unusable_urls_are_unsupported(url: str) -> None:
    with pytest.raises(UnsupportedBackendError):
        open_backend(url, FIXTURE_RESOURCES)


def test_postgres_backend_refuses_another_kind_of_url() -> None:
    with pytest.raises(UnsupportedBackendError):
        PostgresBackend(FIXTURE_RESOURCES, "sqlite:storage.db")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/proc/storage.db", "unable to open database file"),
        ("{tmp}/missing/storage.db", "unable to open database file"),
        ("{tmp}", "unable to open database file"),
    ],
    ids=["read-only file system", "missing directory", "a directory"],
)
def test_an_sqlite_store_that_cannot_be_opened_names_its_file(
    tmp_path: Path, path: str, reason: str
) -> None:
    database = path.format(tmp=tmp_path)
    with pytest.raises(StoreUnavailableError) as refused:
        open_backend(f"sqlite://{database}", FIXTURE_RESOURCES)
    assert str(refused.value) == f"cannot open SQLite database {database}: {reason}"
    assert not Path(database).is_file()


@pytest.mark.parametrize("where", ["127.0.0.1:1/postgres", "127.0.0.1:5432/nodb"])
def test_a_postgres_store_that_cannot_be_reached_names_it_and_the_cause(where: str) -> None:
    url = f"postgresql://postgres@{where}?schema=s"
    with pytest.raises(StoreUnavailableError, match=f"^cannot connect to store {re.escape(url)}: "):
        open_backend(url, FIXTURE_RESOURCES)
