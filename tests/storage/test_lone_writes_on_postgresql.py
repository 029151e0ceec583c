"""Root-view writes on PostgreSQL that are one statement run it as a transaction of its
own: no ``BEGIN``, no ``COMMIT``. The statement must then be all or nothing whatever it
meets, must not go out on a connection the server already ended, and every operation
of more than one statement still runs in one transaction."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from sent_statements import end_pool_sessions, record_statements

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import AppendEntry, ConflictError, DurableRecord
from nenjim.infrastructure.storage.conditions import GuardRef
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    JOURNAL,
    ROOTS,
    WORKFLOW_STATES,
)

TIMEOUT = 20.0


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.lone", "0.1", {"value": value})


@pytest.fixture
def backend(postgres_backend: PostgresBackend) -> PostgresBackend:
    return postgres_backend


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of every statement a cursor sends, and ``BEGIN`` for every
    transaction a connection begins."""
    return record_statements(monkeypatch, psycopg.Cursor)


def test_a_lone_insert_or_replace_is_one_statement_and_no_transaction(
    backend: PostgresBackend, sent: list[str]
) -> None:
    states = backend.view.records(WORKFLOW_STATES)
    states.insert(key="k", revision=0, attributes={}, record=_record("0"))
    assert sent == ["WITH"]
    sent.clear()
    states.replace(
        key="k", expected_revision=0, next_revision=1, attributes={}, record=_record("1")
    )
    assert sent == ["WITH"]
    assert states.fetch("k").revision == 1
    assert [entry.revision for entry in states.history("k")] == [0, 1]


def test_a_lone_append_is_one_statement_and_a_refused_one_writes_nothing(
    backend: PostgresBackend, sent: list[str], postgres_url: str
) -> None:
    """Refused, it leaves no trace, not even the head row of a stream it would create."""
    for owner in ("owner", "other"):
        backend.view.records(ROOTS).insert(
            key=owner, revision=0, attributes={}, record=_record(owner)
        )
    journal = backend.view.streams(JOURNAL)
    entries = [AppendEntry(f"e{n}", _record(str(n))) for n in range(1, 4)]
    sent.clear()
    journal.append(stream="owner", expected_head=0, entries=entries[:2])
    assert sent == ["WITH"]
    for expected, batch in ((1, entries[2:]), (2, [entries[2], entries[0]])):
        with pytest.raises(ConflictError):
            journal.append(stream="owner", expected_head=expected, entries=batch)
    with pytest.raises(ConflictError, match=r"is at 0, expected 1"):
        journal.append(stream="other", expected_head=1, entries=entries[:1])
    assert [entry.id for entry in journal.read(stream="owner")] == ["e1", "e2"]
    schema = backend.schema
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        rows = admin.execute(
            f'SELECT stream, head FROM "{schema}".storage_stream_heads ORDER BY stream'
        ).fetchall()
        ids = admin.execute(f'SELECT count(*) FROM "{schema}".storage_stream_ids').fetchone()
    assert rows == [("owner", 2)]
    assert ids == (2,)


def test_operations_of_several_statements_still_run_in_one_transaction(
    backend: PostgresBackend, sent: list[str]
) -> None:
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=_record("o"))
    sent.clear()
    backend.view.check(guards=[GuardRef(ROOTS, "owner")], conditions=[])
    assert sent == ["BEGIN", "SELECT"]
    sent.clear()
    with backend.transaction() as view:  # a write of a scope is one of its statements
        view.records(WORKFLOW_STATES).insert(
            key="k", revision=0, attributes={}, record=_record("0")
        )
    assert sent == ["BEGIN", "WITH"]


def test_a_lone_write_does_not_go_out_on_a_connection_the_server_ended(
    backend: PostgresBackend, postgres_url: str
) -> None:
    """Its statement would fail there (having written nothing, or having written it:
    the client cannot tell); it goes through ``BEGIN``, which finds the connection dead
    before anything ran, and the pool's next connection takes it."""
    states = backend.view.records(WORKFLOW_STATES)
    states.insert(key="before", revision=0, attributes={}, record=_record("0"))
    end_pool_sessions(postgres_url, backend.schema)
    states.insert(key="after", revision=0, attributes={}, record=_record("0"))
    states.replace(
        key="before", expected_revision=0, next_revision=1, attributes={}, record=_record("1")
    )
    assert states.fetch("after").revision == 0
    assert states.fetch("before").revision == 1


def test_an_insert_whose_version_a_racing_delete_took_is_refused_whole(
    backend: PostgresBackend, postgres_url: str
) -> None:
    """A delete holds the anchor when the insert starts: the insert waits for it, and its
    event's version, counted by the statement's snapshot before the delete committed,
    is the delete's. Sent alone, the insert must not commit its row without its event.
    (No unique constraint applies to the row: one that does locks the anchor first.)"""
    executions = backend.view.records(EXECUTIONS)
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=_record("o"))
    executions.insert(
        key="run", revision=0, attributes={"owner": "owner", "active": False}, record=_record("0")
    )
    deleted, release = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def delete() -> None:
        with backend.transaction() as view:
            view.records(EXECUTIONS).delete(key="run")
            deleted.set()
            assert release.wait(TIMEOUT)

    def insert() -> None:
        try:
            executions.insert(
                key="run",
                revision=0,
                attributes={"owner": "owner", "active": False},
                record=_record("again"),
            )
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    deleter = threading.Thread(target=delete)
    deleter.start()
    assert deleted.wait(TIMEOUT)
    inserter = threading.Thread(target=insert)
    inserter.start()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        deadline = time.monotonic() + TIMEOUT
        while not admin.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
            "AND wait_event_type = 'Lock'",
            (f"nenjim-storage:{backend.schema}",),
        ).fetchone():
            assert time.monotonic() < deadline, "the insert did not wait for the delete"
            time.sleep(0.01)
    release.set()
    deleter.join(TIMEOUT)
    inserter.join(TIMEOUT)
    (error,) = outcome
    assert isinstance(error, ConflictError)
    assert "record insert conflicted: agent.executions/run" in str(error)
    assert executions.read("run") is None
    assert [entry.revision for entry in executions.history("run")] == [0]


def test_lone_writes_on_one_connection_keep_a_cursor_per_statement_and_read_their_own_answer(
    postgres_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection keeps a cursor for each statement text it sends alone (outside any
    transaction): each operation reads the answer to its own statement, a refused one's
    included, never its predecessor's."""
    backend = PostgresBackend(
        [ROOTS, JOURNAL, WORKFLOW_STATES],
        postgres_schema_url.replace("max_overflow=7", "max_overflow=0"),
    )
    cursors: set[tuple[int, str]] = set()
    execute = psycopg.Cursor.execute

    def recorded(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if cursor.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            # A statement sent alone: no transaction is open.
            cursors.add((id(cursor), str(query)))
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    try:
        states = backend.view.records(WORKFLOW_STATES)
        journal = backend.view.streams(JOURNAL)
        backend.view.records(ROOTS).insert(key="s", revision=0, attributes={}, record=_record("s"))
        states.insert(key="k", revision=0, attributes={}, record=_record("0"))
        with pytest.raises(ConflictError, match="duplicate record identity"):
            states.insert(key="k", revision=0, attributes={}, record=_record("again"))
        appended = journal.append(
            stream="s", expected_head=0, entries=[AppendEntry("a", _record("a"))]
        )
        assert [entry.position for entry in appended] == [1]
        with pytest.raises(ConflictError):
            states.replace(
                key="k", expected_revision=5, next_revision=6, attributes={}, record=_record("x")
            )
        stored = states.replace(
            key="k", expected_revision=0, next_revision=1, attributes={}, record=_record("1")
        )
        assert stored.revision == 1
        with pytest.raises(ConflictError):
            journal.append(stream="s", expected_head=0, entries=[AppendEntry("b", _record("b"))])
        appended = journal.append(
            stream="s", expected_head=1, entries=[AppendEntry("b", _record("b"))]
        )
        assert [entry.position for entry in appended] == [2]
        texts = {text for _, text in cursors}
        assert len(texts) >= 3  # the inserts, the append and the replace
        assert len(cursors) == len(texts) == len({cursor for cursor, _ in cursors})
        assert states.fetch("k").record == _record("1")
        assert [entry.id for entry in journal.read(stream="s")] == ["a", "b"]
    finally:
        backend.close()
