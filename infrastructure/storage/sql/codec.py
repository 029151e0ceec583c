"""Stored rows and event states back into entries, re-validated against the resource.

A value the database hands back that the resource would not accept (an
attribute of the wrong type, a missing field, a payload that is not
Canonical JSON) is a ``SerializationError``: the driver never returns what
the SPI could not have stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from nenjim.infrastructure.storage.durable_record import DurableRecord
from nenjim.infrastructure.storage.entries import (
    Attributes,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.resource import Resource

_T = TypeVar("_T")


def attributes(resource: Resource, value: Any) -> Attributes:
    """Stored attributes, checked against the declaration."""
    try:
        return resource.validate_attributes(value)
    except (TypeError, ValueError) as error:
        message = f"stored attributes of {resource.id} are invalid: {error}"
        raise SerializationError(message) from None


def envelope(record_type: Any, format_version: Any, payload: Any) -> DurableRecord:
    """A stored envelope; the payload is canonical text (a row) or parsed JSON (an event)."""
    if isinstance(payload, str):
        return DurableRecord.from_json(record_type, format_version, payload)
    return DurableRecord(record_type, format_version, payload)


def record_row(resource: Resource, row: Sequence[Any]) -> RecordEntry:
    """``(key, revision, attributes, record_type, format_version, payload)`` as an entry.

    ``attributes`` is already parsed JSON.
    """
    key, revision, attribute_map, record_type, format_version, payload = row
    return _checked(
        lambda: RecordEntry(
            key,
            revision,
            attributes(resource, attribute_map),
            envelope(record_type, format_version, payload),
        )
    )


def record_event(resource: Resource, state: Mapping[str, Any]) -> RecordEntry:
    """The row a record-write event stored."""
    return _checked(
        lambda: RecordEntry(
            state["key"],
            state["revision"],
            attributes(resource, state["attributes"]),
            envelope(state["record_type"], state["format_version"], state["payload"]),
        )
    )


def recorded_event(resource: Resource, state: Mapping[str, Any]) -> RecordedEntry:
    """A history item: the row a record-write event stored, and when."""
    entry = record_event(resource, state)
    return _checked(
        lambda: RecordedEntry(
            entry.key,
            entry.revision,
            entry.attributes,
            entry.record,
            datetime.fromisoformat(state["recorded_at"]),
        )
    )


def stream_event(position: int, state: Mapping[str, Any]) -> StreamEntry:
    """The entry a stream-append event stored, at its current SPI position."""
    return _checked(
        lambda: StreamEntry(
            position,
            state["id"],
            envelope(state["record_type"], state["format_version"], state["payload"]),
        )
    )


def blob_row(resource: Resource, key: str, data: Any, attribute_map: Any) -> BlobEntry:
    """A stored blob."""
    return _checked(lambda: BlobEntry(key, bytes(data), attributes(resource, attribute_map)))


def _checked(build: Callable[[], _T]) -> _T:
    """Run ``build``; a malformed stored value (missing field, wrong type) cannot be served."""
    try:
        return build()
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise SerializationError(f"stored value is malformed: {error!r}") from error
