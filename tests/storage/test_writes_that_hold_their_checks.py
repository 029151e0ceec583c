"""Writes sent as the statement that checks them. A replace is an ``UPDATE`` whose
``WHERE`` holds the revision, the immutable and expected attributes (compared as JSON
values) and the guard's anchor, with its event: it reads nothing first, and one that
finds no row falls to the full path, which reads the row and reports the first check
that fails. On PostgreSQL an insert takes its anchor's lock in the statement that
inserts the row and its event, and an append its anchor's and its head's locks in the
statement that moves the head and writes the entries."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nenjim.infrastructure.sqlite.storage import SQLiteDriver
from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConflictError,
    DurableRecord,
    GuardRef,
    NoRows,
    NotFoundError,
    RevisionIs,
    SerializationError,
    StreamHeadIs,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    EXECUTIONS_ID,
    FIXTURE_RESOURCES,
    JOURNAL,
    ROOTS,
    ROOTS_ID,
)

# Keys as the SPI takes them: no NUL, no lone surrogate; quotes, backslashes, control and
# non-ASCII characters included, each of which JSON text may write another way.
KEYS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1
).filter(lambda key: len(key.encode("utf-8")) <= 240)
RUNS = itertools.count()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.replace", "0.1", {"value": value})


@pytest.fixture
def statements() -> list[str]:
    """The statements the backend sends (filled by the ``backend`` fixture): every one on
    SQLite, transaction control included; on PostgreSQL those of its cursors."""
    return []


@pytest.fixture
def backend(
    durable_store_url: str, statements: list[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Backend]:
    if durable_store_url.startswith("sqlite"):
        connect = SQLiteDriver._connect

        def traced(driver: SQLiteDriver) -> Any:
            connection = connect(driver)
            connection.set_trace_callback(statements.append)
            return connection

        monkeypatch.setattr(SQLiteDriver, "_connect", traced)
    else:
        execute = psycopg.Cursor.execute

        def recorded(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.append(str(query))
            return execute(cursor, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    opened = open_backend(durable_store_url, FIXTURE_RESOURCES)
    yield opened
    opened.close()


def _run(backend: Backend, template: str, params: tuple[object, ...]) -> None:
    """Change a row behind the SPI's back, through the backend's own session."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        session.execute(template, params)


def _owned_execution(backend: Backend, owner: str, key: str) -> None:
    roots = backend.view.records(ROOTS)
    if roots.read(owner) is None:
        roots.insert(key=owner, revision=0, attributes={}, record=_record(owner))
    backend.view.records(EXECUTIONS).insert(
        key=key, revision=0, attributes={"owner": owner, "active": False}, record=_record("0")
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(owner=KEYS, expect=st.booleans())
def test_a_replace_whose_checks_hold_reads_nothing(
    backend: Backend, statements: list[str], durable_store_url: str, owner: str, expect: bool
) -> None:
    run = next(RUNS)
    key, owner = f"run-{run}", f"{owner}/{run}"  # one active execution per owner
    _owned_execution(backend, owner, key)
    statements.clear()
    backend.view.records(EXECUTIONS).replace(
        key=key,
        expected_revision=0,
        next_revision=1,
        attributes={"owner": owner, "active": True},
        record=_record("1"),
        expected_attributes={"active": False} if expect else None,
    )
    sent = [statement.split()[0] for statement in statements]
    if durable_store_url.startswith("sqlite"):  # the first UPDATE keeps the attributes
        assert sent == ["BEGIN", "UPDATE", "UPDATE", "INSERT", "COMMIT"]
    else:
        assert sent == ["WITH"]
    executions = backend.view.records(EXECUTIONS)
    assert executions.fetch(key).revision == 1
    assert executions.fetch(key).attributes == {"owner": owner, "active": True}
    assert [entry.revision for entry in executions.history(key)] == [0, 1]
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_a_replace_that_keeps_its_attributes_leaves_their_indexes_alone(
    backend: Backend, statements: list[str], durable_store_url: str
) -> None:
    """On SQLite, which rewrites the index entries of every column an ``UPDATE`` sets, a
    replace whose attributes are the stored ones does not set them: one ``UPDATE``
    without the attributes, its event, whatever order the caller gives them in. The
    indexes still find the row and the unique constraint still holds."""
    _owned_execution(backend, "owner", "run")
    executions = backend.view.records(EXECUTIONS)
    active = {"owner": "owner", "active": True}
    executions.replace(
        key="run", expected_revision=0, next_revision=1, attributes=active, record=_record("1")
    )
    statements.clear()
    executions.replace(
        key="run", expected_revision=1, next_revision=2, attributes=active, record=_record("2")
    )
    reordered = {"active": True, "owner": "owner"}
    executions.replace(
        key="run", expected_revision=2, next_revision=3, attributes=reordered, record=_record("3")
    )
    if durable_store_url.startswith("sqlite"):
        sent = [statement.split()[0] for statement in statements]
        assert sent == ["BEGIN", "UPDATE", "INSERT", "COMMIT"] * 2
        assert "attributes" not in statements[1].split(" WHERE ")[0]
        assert "attributes" not in statements[5].split(" WHERE ")[0]
    else:
        assert [statement.split()[0] for statement in statements] == ["WITH"] * 2
    (found,) = executions.scan(index="owner_active", equals=active)
    assert (found.key, found.revision, found.record) == ("run", 3, _record("3"))
    assert [row.key for row in executions.scan(index="owner", equals={"owner": "owner"})] == ["run"]
    with pytest.raises(UniqueConstraintError):
        executions.insert(key="second", revision=0, attributes=active, record=_record("s"))
    assert [entry.revision for entry in executions.history("run")] == [0, 1, 2, 3]
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_a_replace_whose_anchor_went_missing_is_refused_by_the_full_path(
    backend: Backend,
) -> None:
    _owned_execution(backend, "owner", "run")
    _run(backend, "DELETE FROM {records} WHERE resource = ? AND key = ?", (ROOTS_ID, "owner"))
    with pytest.raises(NotFoundError, match=r"guard record not found: agent\.roots/owner"):
        backend.view.records(EXECUTIONS).replace(
            key="run",
            expected_revision=0,
            next_revision=1,
            attributes={"owner": "owner", "active": True},
            record=_record("1"),
        )
    assert backend.view.records(EXECUTIONS).fetch("run").revision == 0
    assert len(backend.view.records(EXECUTIONS).history("run")) == 1


def test_a_tampered_checked_attribute_is_reported_and_an_unchecked_one_replaced(
    backend: Backend, durable_store_url: str
) -> None:
    """A replace reads only what it checks: a stored attribute of the wrong type that it
    compares is a ``SerializationError``; one it neither compares nor keeps is replaced."""
    _owned_execution(backend, "owner", "tampered")
    json_param = "CAST(? AS jsonb)" if durable_store_url.startswith("postgresql") else "?"
    _run(
        backend,
        "UPDATE {records} SET attributes = " + json_param + " WHERE resource = ? AND key = ?",
        ('{"owner": "owner", "active": 1}', EXECUTIONS_ID, "tampered"),
    )
    executions = backend.view.records(EXECUTIONS)
    changes: dict[str, Any] = {
        "key": "tampered",
        "expected_revision": 0,
        "next_revision": 1,
        "attributes": {"owner": "owner", "active": True},
        "record": _record("1"),
    }
    with pytest.raises(SerializationError, match=r"stored attributes of agent\.executions"):
        executions.replace(expected_attributes={"active": False}, **changes)
    executions.replace(**changes)
    assert executions.fetch("tampered").attributes == {"owner": "owner", "active": True}


def test_an_insert_is_one_statement_with_its_anchor_on_postgresql(
    backend: Backend, statements: list[str], durable_store_url: str
) -> None:
    """The anchor goes in with the row: on PostgreSQL the lock, the row and its event are
    one statement; on SQLite (the transaction holds the only write lock) the row goes in
    and its event's ``INSERT`` finds the anchor."""
    sqlite = durable_store_url.startswith("sqlite")
    statements.clear()
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=_record("o"))
    sent = [statement.split()[0] for statement in statements]
    assert sent == (["BEGIN", "INSERT", "INSERT", "COMMIT"] if sqlite else ["WITH"])
    executions = backend.view.records(EXECUTIONS)
    statements.clear()
    executions.insert(
        key="run", revision=0, attributes={"owner": "owner", "active": False}, record=_record("0")
    )
    sent = [statement.split()[0] for statement in statements]
    if sqlite:
        assert sent == ["BEGIN", "INSERT", "INSERT", "COMMIT"]
        assert "EXISTS" in statements[2]  # the event's statement finds the anchor
    else:
        assert sent == ["WITH"]
    with pytest.raises(NotFoundError, match=r"guard record not found: agent\.roots/nobody"):
        executions.insert(
            key="orphan",
            revision=0,
            attributes={"owner": "nobody", "active": False},
            record=_record("0"),
        )
    assert executions.read("orphan") is None
    assert not executions.history("orphan")
    assert [entry.revision for entry in executions.history("run")] == [0]
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_an_insert_whose_anchor_is_gone_names_the_anchor_before_a_taken_key(
    backend: Backend, durable_store_url: str
) -> None:
    """A guarded insert that finds neither its anchor nor a free key reports the anchor,
    the conflict it meets first; a free key with the anchor gone, the anchor too; and
    neither writes anything."""
    roots, executions = backend.view.records(ROOTS), backend.view.records(EXECUTIONS)
    roots.insert(key="owner", revision=0, attributes={}, record=_record("o"))
    attributes = {"owner": "owner", "active": False}
    executions.insert(key="run", revision=0, attributes=attributes, record=_record("0"))
    with pytest.raises(ConflictError, match=r"^duplicate record identity: agent\.executions/run$"):
        executions.insert(key="run", revision=0, attributes=attributes, record=_record("1"))
    roots.delete(key="owner")
    for key in ("run", "new"):
        with pytest.raises(NotFoundError, match=r"^guard record not found: agent\.roots/owner$"):
            executions.insert(key=key, revision=0, attributes=attributes, record=_record("1"))
    assert executions.fetch("run").record == _record("0")
    assert executions.read("new") is None
    assert [entry.revision for entry in executions.history("run")] == [0]
    assert not executions.history("new")
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_an_append_whose_anchor_is_gone_names_the_anchor_before_the_head(
    backend: Backend, durable_store_url: str
) -> None:
    """An append whose anchor is gone reports the anchor, whether its expected head is
    the stream's (the head would move) or not (a head conflict too), and moves nothing."""
    roots, journal = backend.view.records(ROOTS), backend.view.streams(JOURNAL)
    roots.insert(key="gone", revision=0, attributes={}, record=_record("o"))
    journal.append(stream="gone", expected_head=0, entries=_entries("a"))
    with pytest.raises(ConflictError, match=r"^stream head conflict: agent\.journal/gone is at 1"):
        journal.append(stream="gone", expected_head=0, entries=_entries("b"))
    roots.delete(key="gone")
    for expected_head in (0, 1, 2):
        with pytest.raises(NotFoundError, match=r"^guard record not found: agent\.roots/gone$"):
            journal.append(stream="gone", expected_head=expected_head, entries=_entries("b"))
    with pytest.raises(NotFoundError, match=r"^guard record not found: agent\.roots/never$"):
        journal.append(stream="never", expected_head=0, entries=_entries("n"))
    assert journal.head(stream="gone") == 1
    assert [entry.id for entry in journal.read(stream="gone")] == ["a"]
    assert journal.head(stream="never") == 0
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_a_check_is_one_statement_on_sqlite(
    backend: Backend, statements: list[str], durable_store_url: str
) -> None:
    """On SQLite (the transaction holds the only write lock) every anchor and every
    condition of ``check()`` is read by one ``SELECT``. On PostgreSQL the anchor's lock
    is a statement of its own: a statement reads the snapshot it started with, so reads
    sent with a lock it waited for would miss what the lock's holder committed."""
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=_record("o"))
    statements.clear()
    conditions = [
        RevisionIs(ROOTS, "owner", 0),
        StreamHeadIs(JOURNAL, "owner", 0),
        NoRows(EXECUTIONS, "owner_active", {"owner": "owner", "active": True}),
    ]
    assert backend.view.check(guards=[GuardRef(ROOTS, "owner")], conditions=conditions)
    sent = [statement.split()[0] for statement in statements]
    if durable_store_url.startswith("sqlite"):
        assert sent == ["BEGIN", "SELECT", "COMMIT"]
    else:
        assert sent == ["SELECT"] * 4
        assert "FOR UPDATE" in statements[0]


def _entries(*ids: str) -> list[AppendEntry]:
    return [AppendEntry(entry_id, _record(entry_id)) for entry_id in ids]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(owner=KEYS, sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_an_append_is_one_statement_on_postgresql(
    backend: Backend, statements: list[str], durable_store_url: str, owner: str, sizes: list[int]
) -> None:
    """The anchor's lock, the head's move (the stream's first append creates its head)
    and every entry: one statement on PostgreSQL, whatever the batch, for streams of any
    name; on SQLite the head's move, the ids, then the events, whose statement finds the
    anchor."""
    owner = f"{owner}/{next(RUNS)}"
    backend.view.records(ROOTS).insert(key=owner, revision=0, attributes={}, record=_record("o"))
    journal = backend.view.streams(JOURNAL)
    head = 0
    for size in sizes:
        ids = [f"e{head + n}" for n in range(1, size + 1)]
        statements.clear()
        stored = journal.append(stream=owner, expected_head=head, entries=_entries(*ids))
        sent = [statement.split()[0] for statement in statements]
        if durable_store_url.startswith("sqlite"):
            assert sent == ["BEGIN", "INSERT", "INSERT", "INSERT", "COMMIT"]
            assert "EXISTS" in statements[3]  # the events' statement finds the anchor
        else:
            assert sent == ["WITH"]
        assert [(entry.position, entry.id) for entry in stored] == [
            (head + n, entry_id) for n, entry_id in enumerate(ids, start=1)
        ]
        head += size
    assert journal.head(stream=owner) == head
    assert [entry.id for entry in journal.read(stream=owner)] == [
        f"e{n}" for n in range(1, head + 1)
    ]
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok


def test_a_refused_append_writes_nothing_and_names_what_refused_it(backend: Backend) -> None:
    """Every refusal the one statement can meet, each reported as the full path did: a
    missing anchor, a new stream expected above 0, an existing one at another head (the
    head it is at), an id already in the live stream."""
    journal = backend.view.streams(JOURNAL)
    with pytest.raises(NotFoundError, match=r"guard record not found: agent\.roots/nobody"):
        journal.append(stream="nobody", expected_head=0, entries=_entries("e1"))
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=_record("o"))
    with pytest.raises(ConflictError, match=r"agent\.journal/owner is at 0, expected 2"):
        journal.append(stream="owner", expected_head=2, entries=_entries("e1"))
    assert journal.head(stream="owner") == 0
    journal.append(stream="owner", expected_head=0, entries=_entries("e1", "e2"))
    for stale in (0, 1, 3):
        with pytest.raises(ConflictError, match=rf"agent\.journal/owner is at 2, expected {stale}"):
            journal.append(stream="owner", expected_head=stale, entries=_entries("e9"))
    with pytest.raises(ConflictError, match=r"duplicate stream entry identity: .*/owner/e2"):
        journal.append(stream="owner", expected_head=2, entries=_entries("e3", "e2"))
    assert journal.head(stream="owner") == 2
    assert [entry.id for entry in journal.read(stream="owner")] == ["e1", "e2"]
    assert journal.head(stream="nobody") == 0
    assert journal.read(stream="nobody") == ()
