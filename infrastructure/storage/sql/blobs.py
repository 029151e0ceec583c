"""Blobs: written once, as one ``BlobPut`` event in the log and a row of ``storage_blobs``.

The event holds the bytes (:func:`events.blob_state`); the row holds the key, the
attributes and no bytes (``data`` is empty), so a blob's bytes are stored once. A fetch
reads the row and, when its ``data`` is empty, the newest event of the blob's log stream
(a purge stubs the events and deletes the row; a put after it follows them). Rows
written before the bytes were kept once still hold them, and are served from the row.

``INSERT ... ON CONFLICT DO NOTHING`` then, when a row was already there,
read it back and compare the bytes: equal bytes return the stored blob
(first attributes win), other bytes are a ``BlobConflictError``. On
PostgreSQL a racing put of the same key waits for the first to commit and
then reads its row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nenjim.infrastructure.storage.entries import BlobEntry
from nenjim.infrastructure.storage.errors import (
    BlobConflictError,
    ConflictError,
    SerializationError,
)
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import codec, events, purges
from nenjim.infrastructure.storage.sql.dialect import dumps, primary_key
from nenjim.infrastructure.storage.sql.session import Session

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.purge import Purge

_EVENTS_KEY = primary_key("events")


def put(session: Session, resource: Resource, blob: BlobEntry) -> BlobEntry:
    """Store ``blob`` unless its key exists; the stored blob either way."""
    dialect = session.dialect
    row = (resource.id, blob.key, b"", dialect.json(dumps(dict(blob.attributes))))
    both = dialect.insert_blob
    if both is not None:
        inserted = _insert_both(session, both, resource, blob, row)
    else:
        inserted = _insert(session, resource, blob, row)
    if inserted:
        return blob
    stored = fetch(session, resource, blob.key)
    if stored is None:
        raise ConflictError(f"blob {resource.id}/{blob.key} vanished while being written")
    if stored.data != blob.data:
        raise BlobConflictError(f"blob {resource.id}/{blob.key} exists with other bytes")
    return stored


def _insert_both(
    session: Session, template: str, resource: Resource, blob: BlobEntry, row: tuple[object, ...]
) -> bool:
    """The row and its event in one statement (``template``, the dialect's
    ``insert_blob``), sent alone when it is all the operation writes; whether the row
    went in."""
    originator = events.blob_originator(session.dialect, resource.id, blob.key)
    event = (originator, originator, events.BLOB_PUT, events.blob_state(resource.id, blob))
    try:
        cursor = session.alone(template, (*row, *event))
    except Exception as error:
        if session.dialect.violated_index(error) == _EVENTS_KEY:  # the version: taken since
            raise ConflictError(f"blob {resource.id}/{blob.key} is already in the log") from error
        raise
    ((inserted, _),) = cursor.fetchall()
    return bool(inserted)


def _insert(session: Session, resource: Resource, blob: BlobEntry, row: tuple[object, ...]) -> bool:
    """The row, then, if it went in, its event; whether the row went in."""
    inserted = session.execute(
        "INSERT INTO {blobs} (resource, key, data, attributes) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (resource, key) DO NOTHING",
        row,
    )
    if inserted:
        originator = events.blob_originator(session.dialect, resource.id, blob.key)
        state = events.blob_state(resource.id, blob)
        # A key purged before has events already: the put follows them.
        if not events.append_at(session, originator, 1, events.BLOB_PUT, state):
            found = session.one(
                "SELECT MAX(originator_version) FROM {events} WHERE originator_id = ?",
                (originator,),
            )
            version = 1 if found is None else int(found[0]) + 1
            if not events.append_at(session, originator, version, events.BLOB_PUT, state):
                raise ConflictError(f"blob {resource.id}/{blob.key} is already in the log")
    return bool(inserted)


def purge(session: Session, resource: Resource, key: str) -> Purge | None:
    """Delete the blob's row and purge its bytes from the log."""
    session.execute("DELETE FROM {blobs} WHERE resource = ? AND key = ?", (resource.id, key))
    return purges.remove(session, events.blob_stream(resource.id, key), "blobs", resource.id, key)


def fetch(session: Session, resource: Resource, key: str) -> BlobEntry | None:
    """The stored blob, or ``None``."""
    row = session.one(
        "SELECT b.attributes, b.data, CASE WHEN length(b.data) = 0 THEN "
        "(SELECT e.state FROM {events} e WHERE e.originator_id = ? "
        "ORDER BY e.originator_version DESC LIMIT 1) END "
        "FROM {blobs} b WHERE b.resource = ? AND b.key = ?",
        (events.blob_originator(session.dialect, resource.id, key), resource.id, key),
    )
    if row is None:
        return None
    attributes, data, logged = row
    if not data:
        if logged is None:
            raise SerializationError(
                f"blob {resource.id}/{key} has no bytes: its row holds none, its log stream no put"
            )
        data = _logged_bytes(resource.id, key, logged)
    return codec.blob_row(resource, key, data, session.dialect.load_json(attributes))


def exists(session: Session, resource: Resource, key: str) -> bool:
    """Whether the blob's row is stored (its bytes, in the row or the log, are not read)."""
    found = session.one("SELECT 1 FROM {blobs} WHERE resource = ? AND key = ?", (resource.id, key))
    return found is not None


def _logged_bytes(resource_id: str, key: str, state: bytes | memoryview) -> bytes:
    """The bytes of blob ``key`` its put event's ``state`` holds."""
    found = events.decode_blob(state)
    if (found.get("resource"), found.get("key")) != (resource_id, key):
        raise SerializationError(
            f"blob {resource_id}/{key}: the newest event of its log stream is not its put"
        )
    data: bytes = found["data"]
    return data
