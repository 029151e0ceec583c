"""A pooled PostgreSQL connection runs each statement whose answer is read at once on a
cursor it keeps for the statement's text; once read, the cursor keeps neither the
statement's parameters nor its answer (a blob's bytes, a history's rows)."""

from __future__ import annotations

from typing import Any

from nenjim.infrastructure.postgresql.storage import KEPT_CURSORS, PostgresBackend
from nenjim.infrastructure.storage import DurableRecord
from nenjim.infrastructure.storage.testing.resources import CONTENT_BLOBS, WORKFLOW_STATES

BIG = b"x" * 1_000_000


def _kept(backend: PostgresBackend) -> tuple[Any, dict[str, Any]]:
    scope = backend.current_scope()
    assert scope is not None
    connection = scope.context.connection
    return connection, dict(connection._cursors or {})


def test_a_statement_read_at_once_runs_on_its_text_s_cursor_which_lets_go_of_the_answer(
    postgres_backend: PostgresBackend,
) -> None:
    postgres_backend.view.blobs(CONTENT_BLOBS).put_if_absent(
        key="big", data=BIG, attributes={"canonicalization_version": 1}
    )
    record = DurableRecord("test.kept", "0.1", {"value": "v"})
    postgres_backend.view.records(WORKFLOW_STATES).insert(
        key="k", revision=0, attributes={}, record=record
    )
    with postgres_backend.transaction() as view:
        for again in (False, True):  # the second time on the same cursors
            assert view.blobs(CONTENT_BLOBS).fetch("big").data == BIG
            assert [entry.revision for entry in view.records(WORKFLOW_STATES).history("k")] == [0]
            connection, kept = _kept(postgres_backend)
            if not again:
                first = kept
        assert kept == first  # no new cursor for a text run again
        assert 2 <= len(kept) <= KEPT_CURSORS
        for text, cursor in kept.items():
            assert cursor.connection is connection
            assert (cursor.pgresult, cursor._query) == (None, None), text
