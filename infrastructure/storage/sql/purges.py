"""Purging one key's events from ``storage_events``: stubs in place, one marker appended.

The caller has already removed the key's inline rows (and, for a live record
or stream, written the ordinary delete's tombstone) in the same transaction.
The stubs are updates of the rows in place, so the log's ids and versions do
not move; the marker's insert is the compare-and-swap against a racing purge
of the same key (its version is taken once).
"""

from __future__ import annotations

import uuid

from nenjim.infrastructure.storage import purge
from nenjim.infrastructure.storage.errors import ConflictError
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.session import Session

_PAYLOADS = "topic IN (?, ?, ?, ?)"


def remove(
    session: Session,
    originator: uuid.UUID,
    kind: str,
    resource_id: str,
    key: str,
    *,
    below: int | None = None,
    before: int | None = None,
) -> purge.Purge | None:
    """Replace every payload event of log stream ``originator`` (those below version
    ``below``, if given) by its stub and append the marker; ``None`` if there were none.

    ``before`` is the stream position the marker names for a partial purge."""
    bound = session.dialect.originator(originator)
    query = (
        "SELECT originator_version, topic, state FROM {events} WHERE originator_id = ? AND "
        + _PAYLOADS
    )
    params: list[object] = [bound, *purge.PAYLOAD_TOPICS]
    if below is not None:
        query += " AND originator_version < ?"
        params.append(below)
    rows = session.all(query + " ORDER BY originator_version", params)
    if not rows:
        return None
    removed = [purge.Removed(int(v), str(t), bytes(s)) for v, t, s in rows]
    marker_stream = purge.purge_stream(kind, resource_id, key)
    found = session.one(
        "SELECT COALESCE(MAX(originator_version), 0) FROM {events} WHERE originator_id = ?",
        (session.dialect.originator(marker_stream),),
    )
    marker = 1 if found is None else int(found[0]) + 1
    for item in removed:
        session.execute(
            "UPDATE {events} SET topic = ?, state = ? "
            "WHERE originator_id = ? AND originator_version = ?",
            (purge.PURGED, purge.stub(marker, item).encode("utf-8"), bound, item.version),
        )
    made = purge.plan(kind, resource_id, key, removed, before)
    if not events.append(session, marker_stream, marker, purge.PURGE, purge.marker_state(made)):
        raise ConflictError(f"purge conflicted: {kind} {resource_id}/{key} is being purged")
    return made


def markers(session: Session, kind: str, resource_id: str, key: str) -> list[purge.Purge]:
    """The purges of ``key`` its purge stream holds, oldest first."""
    rows = session.all(
        "SELECT state FROM {events} WHERE originator_id = ? ORDER BY originator_version",
        (session.dialect.originator(purge.purge_stream(kind, resource_id, key)),),
    )
    return [purge.marker_of(events.decode(state)) for (state,) in rows]
