"""Keys, stream names, entry ids, record types and attribute values that are subclasses of
``str`` or ``int`` (enum members) are stored as the plain text and numbers they hold: every
backend answers and reads back a plain ``str`` or ``int``, the key's history is found by
its text, a scan by the plain value finds the row, and the audit is clean.

A ``(str, Enum)`` member formats as ``Code.A``, not as its value: a record keyed by one
lost its history on SQLite, and memory answered the enum where SQL answered text.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from nenjim.infrastructure.storage import AppendEntry, DurableRecord
from nenjim.infrastructure.storage.audit import audit_backend
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    ROOTS,
)


class Code(str, enum.Enum):  # noqa: UP042 (the older form, which formats unlike its value)
    """A str-valued enum of the older mixin form: it formats as ``Code.A``, not ``"c-1"``."""

    A = "c-1"
    TYPE = "test.coded"
    VERSION = "0.1"


class Count(enum.IntEnum):
    """An integer enum that prints as its name."""

    THREE = 3

    def __str__(self) -> str:
        return self.name


def _plain_types(values: Mapping[str, Any]) -> dict[str, type]:
    return {name: type(value) for name, value in values.items()}


def test_subclasses_of_str_and_int_are_stored_as_the_plain_values_they_hold(
    store_url: str,
) -> None:
    """Keys, entry ids, record types, attribute values and payload members that are enum
    members are stored as their text and numbers: every backend answers and reads back
    plain ``str`` and ``int``, the history of the key is found, a scan by the plain value
    finds the row, and the audit is clean."""
    backend = open_backend(store_url, FIXTURE_RESOURCES)
    try:
        view = backend.view
        record = DurableRecord(Code.TYPE, Code.VERSION, {Code.A: Count.THREE})
        assert (record.record_type, record.format_version) == ("test.coded", "0.1")
        assert type(record.record_type) is str
        assert record.payload_json == '{"c-1":3}'
        items = view.records(INVENTORY_ITEMS)
        attributes = {
            "code": Code.A,
            "label": Code.TYPE,
            "quantity": Count.THREE,
            "reserved": Count.THREE,
            "available": True,
            "flagged": None,
        }
        answered = items.insert(key=Code.A, revision=0, attributes=attributes, record=record)
        plain = {"code": str, "label": str, "quantity": int, "reserved": int}
        for entry in (
            answered,
            items.fetch("c-1"),
            *items.history("c-1"),
            *items.scan(index="code", equals={"code": "c-1"}),
        ):
            assert type(entry.key) is str
            assert entry.key == "c-1"
            assert _plain_types(entry.attributes) == {
                **plain,
                "available": bool,
                "flagged": type(None),
            }
            assert entry.record == record
        assert len(items.history(Code.A)) == 1
        view.records(ROOTS).insert(key=Code.A, revision=0, attributes={}, record=record)
        (appended,) = view.streams(JOURNAL).append(
            stream=Code.A, expected_head=0, entries=[AppendEntry(Code.TYPE, record)]
        )
        (read,) = view.streams(JOURNAL).read(stream="c-1")
        for entry in (appended, read):
            assert type(entry.id) is str
            assert entry.id == "test.coded"
        blob = view.blobs(CONTENT_BLOBS).put_if_absent(
            key=Code.A, data=b"x", attributes={"canonicalization_version": Count.THREE}
        )
        fetched = view.blobs(CONTENT_BLOBS).fetch("c-1")
        for stored in (blob, fetched):
            assert type(stored.key) is str
            assert type(stored.attributes["canonicalization_version"]) is int
        if store_url != "memory:":
            assert audit_backend(backend).ok
    finally:
        backend.close()
