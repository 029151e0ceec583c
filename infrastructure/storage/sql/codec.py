"""Stored rows and event states back into entries, re-validated against the resource.

A value the database hands back that the resource would not accept (an
attribute of the wrong type, a missing field, a payload that is not
Canonical JSON) is a ``SerializationError``: the driver never returns what
the SPI could not have stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

from nenjim.infrastructure.storage.durable_record import DurableRecord
from nenjim.infrastructure.storage.entries import (
    Attributes,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
    validated_record_entry,
)
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.scalars import validate_key, validate_revision
from nenjim.infrastructure.storage.sql import events

_T = TypeVar("_T")

MEMO_TEXT = 16 * 1024
"""Stored payloads and event states up to this many characters (bytes) are decoded once per
process: the same text always decodes to the same immutable envelope, so a row read again
(a thread's newest checkpoint, its pending writes) skips the parse and the canonical check."""
MEMO_ITEMS = 4096


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
        if len(payload) <= MEMO_TEXT and type(record_type) is str and type(format_version) is str:
            return _stored_envelope(record_type, format_version, payload)
        return DurableRecord.from_json(record_type, format_version, payload)
    return DurableRecord(record_type, format_version, payload)


@lru_cache(maxsize=MEMO_ITEMS)
def _stored_envelope(record_type: str, format_version: str, payload: str) -> DurableRecord:
    """:meth:`DurableRecord.from_json`, remembered (a failure is not: it raises every time)."""
    return DurableRecord.from_json(record_type, format_version, payload)


def record_row(row: Sequence[Any]) -> RecordEntry:
    """``(key, revision, attributes, record_type, format_version, payload)`` as an entry.

    ``attributes`` are already checked (by :func:`attributes`).
    """
    key, revision, checked, record_type, format_version, payload = row
    # The attributes are read-only: shared, not copied, with other entries of the same text.
    # What _checked does, inline: every row of every read comes through here.
    try:
        return validated_record_entry(
            validate_key(key),
            validate_revision(revision),
            checked,
            envelope(record_type, format_version, payload),
        )
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise SerializationError(f"stored value is malformed: {error!r}") from error


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


def stream_state(position: int, state: bytes | memoryview) -> StreamEntry:
    """The entry a stream-append event's stored state (its JSON bytes) holds, at its current
    SPI position."""
    data = bytes(state)
    if len(data) > MEMO_TEXT:
        return stream_event(position, events.decode(data))
    entry_id, record = _stored_entry(data)
    # The id and record were checked when the state was decoded (once per text).
    return StreamEntry.checked(validate_revision(position, "position"), entry_id, record)


@lru_cache(maxsize=MEMO_ITEMS)
def _stored_entry(state: bytes) -> tuple[str, DurableRecord]:
    """The id and envelope of a stream-append event's state, remembered (see
    :data:`MEMO_TEXT`)."""
    entry = stream_event(1, events.decode(state))
    return entry.id, entry.record


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
