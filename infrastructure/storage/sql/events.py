"""The log: ``storage_events``, one log stream per record key, SPI stream and blob.

Each event is a row ``(originator_id, originator_version, topic, state,
notification_id)`` as in the ``eventsourcing`` recorder tables. The
originator id is a UUIDv5 of the resource and key, so a key keeps one log
stream for its whole life (a record re-inserted after a delete continues
it). ``state`` is compact JSON (UTF-8) naming the resource and key, so the
log alone can rebuild every projection table.

Writes insert at an expected version; the primary key
``(originator_id, originator_version)`` is the compare-and-swap, and
:func:`append` reports a writer that lost it instead of raising.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from infrastructure.storage.durable_record import DurableRecord
from infrastructure.storage.entries import BlobEntry, RecordEntry, StreamEntry
from infrastructure.storage.errors import SerializationError
from infrastructure.storage.sql.dialect import dumps
from infrastructure.storage.sql.session import Session

NAMESPACE = uuid.UUID("0b8f6b0e-5f2a-5c57-9d1e-6e656e6a696d")
"""The fixed UUIDv5 namespace of every storage log stream."""

RECORD_INSERTED = "nenjim.storage:RecordInserted"
RECORD_REPLACED = "nenjim.storage:RecordReplaced"
RECORD_DELETED = "nenjim.storage:RecordDeleted"
STREAM_ENTRY_APPENDED = "nenjim.storage:StreamEntryAppended"
STREAM_DELETED = "nenjim.storage:StreamDeleted"
BLOB_PUT = "nenjim.storage:BlobPut"

RECORD_WRITES = (RECORD_INSERTED, RECORD_REPLACED)


def record_stream(resource_id: str, key: str) -> uuid.UUID:
    """The log stream of record ``key``."""
    return uuid.uuid5(NAMESPACE, f"records\0{resource_id}\0{key}")


def entry_stream(resource_id: str, stream: str) -> uuid.UUID:
    """The log stream of SPI stream ``stream``."""
    return uuid.uuid5(NAMESPACE, f"streams\0{resource_id}\0{stream}")


def blob_stream(resource_id: str, key: str) -> uuid.UUID:
    """The log stream of blob ``key`` (one event: blobs are written once)."""
    return uuid.uuid5(NAMESPACE, f"blobs\0{resource_id}\0{key}")


def append(
    session: Session, originator: uuid.UUID, version: int, topic: str, state: Mapping[str, Any]
) -> bool:
    """Insert one event at ``version``; False if that version already exists."""
    body = dumps(dict(state)).encode("utf-8")
    params = (session.dialect.originator(originator), version, topic, body)
    return session.execute(session.dialect.append_event, params) == 1


def last_version(session: Session, originator: uuid.UUID) -> int:
    """The highest version written to ``originator`` (0 for none)."""
    row = session.one(
        "SELECT max(originator_version) FROM {events} WHERE originator_id = ?",
        (session.dialect.originator(originator),),
    )
    return 0 if row is None or row[0] is None else int(row[0])


def history(session: Session, originator: uuid.UUID) -> list[tuple[str, dict[str, Any]]]:
    """Every event of ``originator`` in version order, as ``(topic, state)``."""
    rows = session.all(
        "SELECT topic, state FROM {events} WHERE originator_id = ? ORDER BY originator_version",
        (session.dialect.originator(originator),),
    )
    return [(str(topic), decode(state)) for topic, state in rows]


def decode(state: bytes | memoryview) -> dict[str, Any]:
    """An event's state; ``SerializationError`` if it is not a JSON object."""
    try:
        value = json.loads(bytes(state))
    except (ValueError, RecursionError) as error:
        raise SerializationError(f"stored event state is not JSON: {error!r}") from error
    if not isinstance(value, dict):
        raise SerializationError("stored event state is not a JSON object")
    return value


def record_state(resource_id: str, entry: RecordEntry) -> dict[str, Any]:
    """The state of a record write: the whole stored row."""
    return {
        "resource": resource_id,
        "key": entry.key,
        "revision": entry.revision,
        "attributes": dict(entry.attributes),
        "recorded_at": datetime.now(UTC).isoformat(),
        **_envelope(entry.record),
    }


def tombstone_state(resource_id: str, key: str, revision: int) -> dict[str, Any]:
    """The state of a record delete: the key and the revision it had."""
    return {"resource": resource_id, "key": key, "revision": revision}


def entry_state(resource_id: str, stream: str, entry: StreamEntry) -> dict[str, Any]:
    """The state of one appended stream entry."""
    return {
        "resource": resource_id,
        "stream": stream,
        "position": entry.position,
        "id": entry.id,
        **_envelope(entry.record),
    }


def stream_deleted_state(resource_id: str, stream: str, head: int) -> dict[str, Any]:
    """The state of a stream delete: the head the stream had."""
    return {"resource": resource_id, "stream": stream, "head": head}


def blob_state(resource_id: str, blob: BlobEntry) -> dict[str, Any]:
    """The state of a blob put: key, attributes and the bytes (base64)."""
    return {
        "resource": resource_id,
        "key": blob.key,
        "attributes": dict(blob.attributes),
        "data": base64.b64encode(blob.data).decode("ascii"),
    }


def _envelope(record: DurableRecord) -> dict[str, Any]:
    return {
        "record_type": record.record_type,
        "format_version": record.format_version,
        "payload": record.payload,
    }
