"""A one-entry append on PostgreSQL sends its statement's one-entry form, whose id,
position and state are single values where a batch's are arrays; both forms write and
refuse alike, sent alone or inside a transaction, guarded by an anchor or not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import AppendEntry, ConflictError, DurableRecord, Resource
from nenjim.infrastructure.storage.testing.resources import (
    GUARD_RESOURCES,
    JOURNAL,
    PLAIN_LOG,
    ROOTS,
)


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.append", "0.1", {"value": value})


def _entry(entry_id: str) -> AppendEntry:
    return AppendEntry(entry_id, _record(entry_id))


@pytest.fixture
def backend(postgres_schema_url: str) -> Iterator[PostgresBackend]:
    """A backend on a fresh schema with unguarded streams beside the guarded ones, and the
    root that guards stream ``s`` of the guarded ones."""
    opened = PostgresBackend(GUARD_RESOURCES, postgres_schema_url)
    opened.view.records(ROOTS).insert(key="s", revision=0, attributes={}, record=_record("root"))
    yield opened
    opened.close()


@pytest.fixture
def appends(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The text and parameters of every append statement a cursor sends from now on."""
    sent: list[tuple[str, tuple[Any, ...]]] = []
    execute = psycopg.Cursor.execute

    def recorded(cursor: Any, query: Any, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "storage_stream_heads AS h" in str(query):
            sent.append((str(query), tuple(params or ())))
        return execute(cursor, query, params, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    return sent


def _lists(params: tuple[Any, ...]) -> int:
    return sum(isinstance(param, list) for param in params)


@pytest.mark.parametrize("resource", [PLAIN_LOG, JOURNAL], ids=["unguarded", "guarded"])
@pytest.mark.parametrize("inside", [False, True], ids=["alone", "in-a-transaction"])
def test_one_entry_goes_as_single_values_and_a_batch_as_arrays(
    backend: PostgresBackend,
    appends: list[tuple[str, tuple[Any, ...]]],
    resource: Resource,
    inside: bool,
) -> None:
    def append(expected_head: int, entries: list[AppendEntry]) -> None:
        if inside:
            with backend.transaction() as view:
                view.streams(resource).append(
                    stream="s", expected_head=expected_head, entries=entries
                )
        else:
            backend.view.streams(resource).append(
                stream="s", expected_head=expected_head, entries=entries
            )

    append(0, [_entry("a")])
    append(1, [_entry("b"), _entry("c")])
    append(3, [_entry("d")])
    (one, _), (batch, batch_params), (one_again, one_params) = appends
    assert "unnest" not in one
    assert _lists(one_params) == 0
    assert one_again == one
    assert "unnest" in batch
    assert _lists(batch_params) == 3

    # Refused alike: an id the stream holds, and a head that moved.
    for expected_head, entries, refusal in (
        (4, [_entry("b")], "duplicate stream entry identity: .*/s/b"),
        (4, [_entry("e"), _entry("b")], "duplicate stream entry identity: .*/s/b"),
        (3, [_entry("e")], "stream head conflict"),
        (3, [_entry("e"), _entry("f")], "stream head conflict"),
    ):
        with pytest.raises(ConflictError, match=refusal):
            append(expected_head, entries)
    stream = backend.view.streams(resource).read(stream="s")
    assert [(entry.position, entry.id) for entry in stream] == [
        (1, "a"),
        (2, "b"),
        (3, "c"),
        (4, "d"),
    ]
    assert [entry.record.payload for entry in stream] == [
        {"value": name} for name in ("a", "b", "c", "d")
    ]
