"""The ids of the storage log's streams: UUIDv5 of a fixed namespace, however they are made."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.sqlite.dialect import SQLiteDialect
from nenjim.infrastructure.storage.sql import events

# Any text a key may hold, and the separators the stream names put between their parts.
names = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)


@given(names)
def test_a_name_s_id_is_uuid5_of_the_namespace_as_uuid_and_as_text(name: str) -> None:
    expected = uuid.uuid5(events.NAMESPACE, name)
    assert events.name_based(name) == expected
    assert events.name_based_text(name) == str(expected)


def test_the_id_text_of_a_known_name() -> None:
    # Computed once with uuid.uuid5: pins the namespace, not just the method.
    assert events.name_based_text("records\0agent.executions\0run-1") == str(
        uuid.uuid5(
            uuid.UUID("0b8f6b0e-5f2a-5c57-9d1e-6e656e6a696d"), "records\0agent.executions\0run-1"
        )
    )


@pytest.mark.parametrize(
    ("stream_of", "originator_of"),
    [
        (events.record_stream, events.record_originator),
        (events.blob_stream, events.blob_originator),
    ],
    ids=["record", "blob"],
)
@given(names, names)
def test_an_originator_is_what_each_dialect_binds_for_its_stream(
    stream_of: Callable[[str, str], uuid.UUID],
    originator_of: Callable[[Any, str, str], Any],
    resource_id: str,
    key: str,
) -> None:
    stream = stream_of(resource_id, key)
    sqlite = SQLiteDialect()
    assert originator_of(sqlite, resource_id, key) == sqlite.originator(stream)
    postgres = PostgresDialect("nenjim")
    assert originator_of(postgres, resource_id, key) == stream
