"""Blobs: written once into ``storage_blobs``, with one ``BlobPut`` event in the log.

``INSERT ... ON CONFLICT DO NOTHING`` then, when a row was already there,
read it back and compare the bytes: equal bytes return the stored blob
(first attributes win), other bytes are a ``BlobConflictError``. On
PostgreSQL a racing put of the same key waits for the first to commit and
then reads its row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nenjim.infrastructure.storage.entries import BlobEntry
from nenjim.infrastructure.storage.errors import BlobConflictError, ConflictError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import codec, events, purges
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.storage.sql.session import Session

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.purge import Purge


def put(session: Session, resource: Resource, blob: BlobEntry) -> BlobEntry:
    """Store ``blob`` unless its key exists; the stored blob either way."""
    inserted = session.execute(
        "INSERT INTO {blobs} (resource, key, data, attributes) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (resource, key) DO NOTHING",
        (resource.id, blob.key, blob.data, session.dialect.json(dumps(dict(blob.attributes)))),
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
        return blob
    stored = fetch(session, resource, blob.key)
    if stored is None:
        raise ConflictError(f"blob {resource.id}/{blob.key} vanished while being written")
    if stored.data != blob.data:
        raise BlobConflictError(f"blob {resource.id}/{blob.key} exists with other bytes")
    return stored


def purge(session: Session, resource: Resource, key: str) -> Purge | None:
    """Delete the blob's row and purge its bytes from the log."""
    session.execute("DELETE FROM {blobs} WHERE resource = ? AND key = ?", (resource.id, key))
    return purges.remove(session, events.blob_stream(resource.id, key), "blobs", resource.id, key)


def fetch(session: Session, resource: Resource, key: str) -> BlobEntry | None:
    """The stored blob, or ``None``."""
    row = session.one(
        "SELECT data, attributes FROM {blobs} WHERE resource = ? AND key = ?", (resource.id, key)
    )
    if row is None:
        return None
    return codec.blob_row(resource, key, row[0], session.dialect.load_json(row[1]))
