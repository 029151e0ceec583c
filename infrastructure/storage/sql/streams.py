"""Streams: one log stream per SPI stream; ``storage_stream_heads`` keeps head and base.

A deleted stream restarts at position 1 but its log stream cannot restart,
so the delete's tombstone version becomes the ``base``: SPI position = log
version - base, and the live entries are the versions ``base+1 ..
base+head``. ``storage_stream_ids`` holds the entry ids of the live stream
(cleared on delete), so a duplicate id is found by one indexed query and a
racing duplicate fails on its primary key. An append locks the head row
(``FOR UPDATE`` on PostgreSQL) after the SPI core locked the guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from infrastructure.storage.entries import AppendEntry, StreamEntry
from infrastructure.storage.errors import ConflictError
from infrastructure.storage.resource import Resource
from infrastructure.storage.sql import codec, events
from infrastructure.storage.sql.session import Session


def head(session: Session, resource: Resource, stream: str) -> int:
    """The number of live entries (0 for a missing stream)."""
    row = session.one(
        "SELECT head FROM {heads} WHERE resource = ? AND stream = ?", (resource.id, stream)
    )
    return 0 if row is None else int(row[0])


def append(
    session: Session,
    resource: Resource,
    stream: str,
    expected_head: int,
    entries: Sequence[AppendEntry],
) -> list[StreamEntry]:
    """Append at ``expected_head`` as the next events of the stream's log stream."""
    if entries:
        # A row to lock even for a new stream; a concurrent creator makes this wait.
        session.execute(
            "INSERT INTO {heads} (resource, stream, head, base) VALUES (?, ?, 0, 0) "
            "ON CONFLICT (resource, stream) DO NOTHING",
            (resource.id, stream),
        )
    current, base = _locked_head(session, resource, stream)
    if current != expected_head:
        raise ConflictError(
            f"stream head conflict: {resource.id}/{stream} is at {current}, "
            f"expected {expected_head}"
        )
    if not entries:
        return []
    originator = events.entry_stream(resource.id, stream)
    stored = []
    for position, entry in enumerate(entries, start=expected_head + 1):
        # The head row is locked, so the ids table is ours to check by inserting:
        # no row inserted means the id is already in the live stream.
        if not session.execute(
            "INSERT INTO {ids} (resource, stream, entry_id) VALUES (?, ?, ?) "
            "ON CONFLICT (resource, stream, entry_id) DO NOTHING",
            (resource.id, stream, entry.id),
        ):
            raise ConflictError(
                f"duplicate stream entry identity: {resource.id}/{stream}/{entry.id}"
            )
        added = StreamEntry(position, entry.id, entry.record)
        state = events.entry_state(resource.id, stream, added)
        if not events.append(
            session, originator, base + position, events.STREAM_ENTRY_APPENDED, state
        ):
            raise ConflictError(f"stream head conflict: {resource.id}/{stream} changed")
        stored.append(added)
    session.execute(
        "UPDATE {heads} SET head = ? WHERE resource = ? AND stream = ?",
        (expected_head + len(entries), resource.id, stream),
    )
    return stored


def read(
    session: Session, resource: Resource, stream: str, after: int, limit: int | None
) -> list[StreamEntry]:
    """Live entries above position ``after``, ascending."""
    # One statement, so head, base and events come from one snapshot even
    # under READ COMMITTED.
    # ``after`` is clamped to the head (nothing lies above it anyway), so that
    # base + after never leaves the signed 64-bit range of a restarted stream.
    query = (
        "SELECT e.originator_version - h.base, e.state FROM {heads} h JOIN {events} e "
        "ON e.originator_id = ? "
        "AND e.originator_version > h.base + CASE WHEN ? < h.head THEN ? ELSE h.head END "
        "AND e.originator_version <= h.base + h.head "
        "WHERE h.resource = ? AND h.stream = ? ORDER BY e.originator_version"
    )
    params: list[object] = [
        session.dialect.originator(events.entry_stream(resource.id, stream)),
        after,
        after,
        resource.id,
        stream,
    ]
    if limit is not None:
        query += " LIMIT ?"
        params.append(limit)
    return [
        codec.stream_event(int(position), events.decode(state))
        for position, state in session.all(query, params)
    ]


def delete(session: Session, resource: Resource, stream: str) -> None:
    """Tombstone the stream: its live entries leave the view, the log keeps them."""
    current, base = _locked_head(session, resource, stream)
    if current == 0:
        return
    tombstone = base + current + 1
    originator = events.entry_stream(resource.id, stream)
    state = events.stream_deleted_state(resource.id, stream, current)
    if not events.append(session, originator, tombstone, events.STREAM_DELETED, state):
        raise ConflictError(f"stream head conflict: {resource.id}/{stream} changed")
    session.execute(
        "UPDATE {heads} SET head = 0, base = ? WHERE resource = ? AND stream = ?",
        (tombstone, resource.id, stream),
    )
    session.execute("DELETE FROM {ids} WHERE resource = ? AND stream = ?", (resource.id, stream))


def _locked_head(session: Session, resource: Resource, stream: str) -> tuple[int, int]:
    row = session.one(
        "SELECT head, base FROM {heads} WHERE resource = ? AND stream = ?"
        + session.dialect.for_update,
        (resource.id, stream),
    )
    return (0, 0) if row is None else (int(row[0]), int(row[1]))
