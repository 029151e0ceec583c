"""A read-only scope on PostgreSQL (``Backend.reading``) sends each statement alone, as a
transaction of its own (no ``BEGIN``, no ``COMMIT``), on a connection the server said
nothing on; inside an open transaction it is a savepoint of it and sees its writes."""

from __future__ import annotations

import psycopg
import pytest
from sent_statements import end_pool_sessions, record_statements

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import AppendEntry, DurableRecord
from nenjim.infrastructure.storage.testing.resources import JOURNAL, ROOTS, WORKFLOW_STATES

TIMEOUT = 20.0


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.reads", "0.1", {"value": value})


@pytest.fixture
def backend(postgres_backend: PostgresBackend) -> PostgresBackend:
    postgres_backend.view.records(ROOTS).insert(
        key="owner", revision=0, attributes={}, record=_record("o")
    )
    postgres_backend.view.streams(JOURNAL).append(
        stream="owner", expected_head=0, entries=[AppendEntry("a", _record("a"))]
    )
    postgres_backend.view.records(WORKFLOW_STATES).insert(
        key="k", revision=0, attributes={}, record=_record("stored")
    )
    return postgres_backend


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of every statement a connection sends, and ``BEGIN`` for every
    transaction a connection begins."""
    return record_statements(monkeypatch, psycopg.Cursor)


def test_reads_of_a_reading_scope_are_sent_alone(backend: PostgresBackend, sent: list[str]) -> None:
    with backend.reading() as view:
        head = view.streams(JOURNAL).head(stream="owner")
        row = view.records(WORKFLOW_STATES).read("k")
    assert head == 1
    assert row is not None
    assert row.record == _record("stored")
    assert sent == ["SELECT", "SELECT"]


def test_a_reading_scope_inside_a_transaction_is_part_of_it(backend: PostgresBackend) -> None:
    states = backend.view.records(WORKFLOW_STATES)

    def read_then_rolled_back() -> None:
        with backend.transaction() as view:
            view.records(WORKFLOW_STATES).insert(
                key="uncommitted", revision=0, attributes={}, record=_record("u")
            )
            with backend.reading() as reads:
                found = reads.records(WORKFLOW_STATES).read("uncommitted")
                assert found is not None
                assert found.record == _record("u")
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        read_then_rolled_back()
    assert states.read("uncommitted") is None


def test_a_reading_scope_does_not_read_on_a_connection_the_server_ended(
    backend: PostgresBackend, postgres_url: str, sent: list[str]
) -> None:
    """It begins a transaction instead, whose ``BEGIN`` finds the connection dead before
    anything ran; the pool's next connection takes the reads."""
    end_pool_sessions(postgres_url, backend.schema)
    sent.clear()
    with backend.reading() as view:
        row = view.records(WORKFLOW_STATES).read("k")
    assert row is not None
    assert row.record == _record("stored")
    assert sent[0] == "BEGIN"
