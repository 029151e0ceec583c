"""The by-hand writers of ``benchmarks.probes.postgres_floor`` write what the engine's insert and
1-entry append write, and check what the statement answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from benchmarks.probes.postgres_floor import by_hand
from benchmarks.storage import OPS, RECORD, RESOURCES, spi_steps
from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import AppendEntry
from nenjim.infrastructure.storage.sql.events import entry_stream, record_stream
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    EXECUTIONS_ID,
    JOURNAL,
    JOURNAL_ID,
    ROOTS,
)

ROOT = "ours-0"
INSERT = next(op for op in OPS if op.name == "insert")
APPEND = next(op for op in OPS if op.name == "append1")


@pytest.fixture
def backend(postgres_schema_url: str) -> Iterator[PostgresBackend]:
    opened = PostgresBackend(RESOURCES, postgres_schema_url)
    yield opened
    opened.close()


def _events(url: str, schema: str, originator: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute(
            f'SELECT originator_version, topic, state FROM "{schema}".storage_events '
            "WHERE originator_id = %s ORDER BY originator_version",
            (originator,),
        ).fetchall()
    return [(version, topic, json.loads(bytes(state))) for version, topic, state in rows]


def test_the_by_hand_insert_writes_the_engine_s_row_and_event(
    backend: PostgresBackend, postgres_url: str
) -> None:
    (ours,) = spi_steps(backend, INSERT, 1)
    ours()  # the engine's insert of ours-0/x0
    with by_hand(backend, INSERT, 1, postgres_url) as (insert,):
        insert()  # ours-0/h0
    records = backend.view.records(EXECUTIONS)
    stored, engine = records.fetch(f"{ROOT}/h0"), records.fetch(f"{ROOT}/x0")
    assert (stored.revision, dict(stored.attributes)) == (0, {"owner": ROOT, "active": False})
    assert stored.record == engine.record

    def written(key: str) -> list[tuple[Any, ...]]:
        events = _events(postgres_url, backend.schema, record_stream(EXECUTIONS_ID, key))
        for _, _, state in events:
            assert state.pop("key") == key
            state.pop("recorded_at")
        return events

    assert written(f"{ROOT}/h0") == written(f"{ROOT}/x0")


def test_the_by_hand_append_writes_the_engine_s_entries_and_events(
    backend: PostgresBackend, postgres_url: str
) -> None:
    spi_steps(backend, APPEND, 1)  # the root the stream is guarded by
    with by_hand(backend, APPEND, 1, postgres_url) as (append,):
        append()
        append()
    journal = backend.view.streams(JOURNAL)
    assert [(entry.position, entry.id) for entry in journal.read(stream=ROOT)] == [
        (1, "e1"),
        (2, "e2"),
    ]
    assert all(entry.record == RECORD for entry in journal.read(stream=ROOT))
    backend.view.records(ROOTS).insert(key="other", revision=0, attributes={}, record=RECORD)
    (engine,) = journal.append(stream="other", expected_head=0, entries=[AppendEntry("e1", RECORD)])
    assert engine.position == 1
    by_hand_events = _events(postgres_url, backend.schema, entry_stream(JOURNAL_ID, ROOT))
    engine_events = _events(postgres_url, backend.schema, entry_stream(JOURNAL_ID, "other"))
    first = by_hand_events[0]
    assert first[2].pop("stream") == ROOT
    assert engine_events[0][2].pop("stream") == "other"
    assert first == engine_events[0]
    assert [version for version, _, _ in by_hand_events] == [1, 2]


def test_a_by_hand_append_that_finds_another_head_fails_loudly(
    backend: PostgresBackend, postgres_url: str
) -> None:
    spi_steps(backend, APPEND, 1)
    backend.view.streams(JOURNAL).append(
        stream=ROOT, expected_head=0, entries=[AppendEntry("x", RECORD)]
    )
    with (
        by_hand(backend, APPEND, 1, postgres_url) as (append,),
        pytest.raises(RuntimeError, match="by-hand append to ours-0 at 0"),
    ):
        append()
