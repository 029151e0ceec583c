"""Streams: one log stream per SPI stream; ``storage_stream_heads`` keeps head and base.

A deleted stream restarts at position 1 but its log stream cannot restart,
so the delete's tombstone version becomes the ``base``: SPI position = log
version - base, and the live entries are the versions ``base+1 ..
base+head``. ``storage_stream_ids`` holds the entry ids of the live stream
(cleared on delete), so a duplicate id is found by one indexed query and a
racing duplicate fails on its primary key. An append locks the head row
(on PostgreSQL in the statement that moves it) after the guard's anchor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nenjim.infrastructure.storage.entries import AppendEntry, StreamEntry
from nenjim.infrastructure.storage.errors import ConflictError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import codec, events, purges, records
from nenjim.infrastructure.storage.sql.dialect import primary_key
from nenjim.infrastructure.storage.sql.session import RecordGuard, Session

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.purge import Purge

_APPEND_KEYS = frozenset((primary_key("ids"), primary_key("events")))
"""The keys an append sent alone fails on when an id or a version is taken."""

IDS_PER_STATEMENT = 500
"""The most entry ids one multi-row ``INSERT`` carries."""


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
    """Append at ``expected_head`` as the next events of the stream's log stream.

    Where the dialect has :attr:`~Dialect.append_rows` (PostgreSQL), one
    statement, whatever the batch size: the anchor's lock, the head row's move
    (creating it for a new stream), and, only if it moved, the entry ids and
    the events. Elsewhere (SQLite) the head is read, checked and moved by one
    statement, then the ids and the events go in as multi-row ``INSERT``\\ s.
    Their results are checked afterwards: a conflict found after a write
    needs no undo, it fails the scope, which rolls back.
    """
    if not entries:
        records.lock_guards(session)
        current, _ = _locked_head(session, resource, stream)
        _expect_head(resource, stream, current, expected_head)
        return []
    dialect = session.dialect
    moved = expected_head + len(entries)
    # What the caller gets back: records of their own, not the caller's.
    stored = StreamEntry.numbered(expected_head + 1, entries)
    state = events.entry_states(resource.id, stream)
    originator = dialect.originator(events.entry_stream(resource.id, stream))
    ids = [entry.id for entry in entries]
    topic = events.STREAM_ENTRY_APPENDED
    if dialect.append_rows is not None and dialect.append_guarded_rows is not None:
        anchor = _own_anchor(session)
        alone = dialect.append_guarded_rows_alone if anchor else dialect.append_rows_alone
        inside = dialect.append_guarded_rows if anchor else dialect.append_rows
        assert alone is not None  # as append_rows is
        where = (resource.id, stream)
        states = [state(added).encode("utf-8") for added in stored]
        arrays: tuple[object, object, object]
        if len(stored) == 1:  # the statement's one-entry form takes scalars
            alone, inside = dialect.append_single[alone], dialect.append_single[inside]
            arrays = (ids[0], stored[0].position, states[0])
        else:
            arrays = (ids, [added.position for added in stored], states)
        entry_ids, positions, entry_states = arrays
        params = (
            *anchor,
            *(*where, expected_head, moved, moved, expected_head),
            *(*where, entry_ids, moved),
            *(originator, topic, positions, entry_states, moved),
        )
        try:
            cursor = session.alone(alone, params, in_transaction=inside)
            ((current, entered, written, *anchored),) = cursor.fetchall()
        except Exception as error:
            if dialect.violated_index(error) not in _APPEND_KEYS:
                raise
            # Sent alone (inside a transaction these go by): the head moved, so the ids or
            # the versions were taken, and nothing was written.
            entered = [
                entry_id for entry_id in ids if not _known(session, resource, stream, entry_id)
            ]
            _check_ids(resource, stream, ids, entered)
            raise ConflictError(f"stream head conflict: {resource.id}/{stream} changed") from error
        if anchored and not anchored[0]:
            raise records.missing_anchor(anchor[0], anchor[1])
        if current is None:  # the row is missing or at another head (and locked)
            _expect_head(resource, stream, head(session, resource, stream), expected_head)
            raise ConflictError(f"stream head conflict: {resource.id}/{stream} changed")
        if int(current) != moved:  # a new stream expected above 0: created at 0
            _expect_head(resource, stream, int(current), expected_head)
        _check_ids(resource, stream, ids, entered)
    else:
        # The anchor is found by the events' statements (one statement fewer); events
        # that did not go in name their first conflict after: a missing anchor (the
        # error fails the scope, which rolls back the head's move), then the ids.
        anchor = _own_anchor(session)
        base = _move_head(session, resource, stream, expected_head, moved, anchor=anchor)
        states = [state(added).encode("utf-8") for added in stored]
        with session.pipeline():
            id_cursors = _send_ids(session, resource, stream, ids)
            event_cursors = events.send_many(
                session, originator, topic, base + expected_head, states, anchor=anchor
            )
        written = sum(cursor.rowcount for cursor in event_cursors)
        if anchor and written != len(stored):
            records.lock_anchor(session, anchor)
        if sum(cursor.rowcount for cursor in id_cursors) != len(ids):
            known = _live_ids(session, resource, stream, base, expected_head)
            _check_ids(
                resource, stream, ids, [entry_id for entry_id in ids if entry_id not in known]
            )
    if written != len(stored):
        raise ConflictError(f"stream head conflict: {resource.id}/{stream} changed")
    return stored


def _known(session: Session, resource: Resource, stream: str, entry_id: str) -> bool:
    """Whether ``entry_id`` is in the live stream."""
    return (
        session.one(
            "SELECT 1 FROM {ids} WHERE resource = ? AND stream = ? AND entry_id = ?",
            (resource.id, stream, entry_id),
        )
        is not None
    )


def _live_ids(session: Session, resource: Resource, stream: str, base: int, live: int) -> set[str]:
    """The ids of the ``live`` entries a stream had before an append (read from their
    events: the ids table holds the append's own by now). Only a refused append asks."""
    rows = session.all(
        "SELECT state FROM {events} WHERE originator_id = ? AND originator_version > ? "
        "AND originator_version <= ?",
        (session.dialect.originator(events.entry_stream(resource.id, stream)), base, base + live),
    )
    return {str(events.decode(state)["id"]) for (state,) in rows}


def _own_anchor(session: Session) -> tuple[str, ...]:
    """The anchor queued for an append, taken off the queue to be locked by its statement
    (``()`` if none is queued); anything else queued is locked here and now."""
    guards = session.guards
    if len(guards) == 1 and not isinstance(guards[0], RecordGuard):
        session.guards = []
        return guards[0]
    records.lock_guards(session)
    return ()


def _move_head(
    session: Session,
    resource: Resource,
    stream: str,
    expected_head: int,
    moved: int,
    *,
    anchor: tuple[str, ...],
) -> int:
    """Move the head from ``expected_head`` to ``moved`` (creating the row of a new
    stream, which must be expected at 0) after the guards; the stream's base.
    ``anchor``: the append's own anchor, not locked yet (``()`` if none), which a head
    that did not move looks for first; the caller locked every other guard.

    One statement where the database already made this connection the only
    writer (SQLite): the head is read, checked and moved at once, where a
    separate read and move would cost a statement more per append. The
    entries' writes follow; a conflict they meet fails the scope, which rolls
    the move back.
    """
    row = session.one(
        "INSERT INTO {heads} AS h (resource, stream, head, base) "
        "VALUES (?, ?, CASE WHEN ? = 0 THEN ? ELSE 0 END, 0) "
        "ON CONFLICT (resource, stream) DO UPDATE SET head = ? "
        "WHERE h.head = ? RETURNING head, base",
        (resource.id, stream, expected_head, moved, moved, expected_head),
    )
    if anchor and (row is None or int(row[0]) != moved):
        records.lock_anchor(session, anchor)  # a missing anchor is the first conflict
    if row is None:  # the row is there, at another head: not moved
        _expect_head(resource, stream, head(session, resource, stream), expected_head)
    elif int(row[0]) != moved:  # a new stream expected above 0: created at 0
        _expect_head(resource, stream, int(row[0]), expected_head)
    return 0 if row is None else int(row[1])


def _expect_head(resource: Resource, stream: str, current: int, expected_head: int) -> None:
    if current != expected_head:
        raise ConflictError(
            f"stream head conflict: {resource.id}/{stream} is at {current}, "
            f"expected {expected_head}"
        )


def _send_ids(session: Session, resource: Resource, stream: str, ids: list[str]) -> list[Any]:
    """Enter ``ids`` in the live stream's id table, inside :meth:`Session.pipeline`.

    The head row is locked, so the table is ours to check by inserting: the
    ``rowcount``\\ s fall short of the ids if one was already in the live stream.
    """
    cursors = []
    for start in range(0, len(ids), IDS_PER_STATEMENT):
        chunk = ids[start : start + IDS_PER_STATEMENT]
        template = _ids_template(session, len(chunk))
        cursors.append(session.send(template, (resource.id, stream, *chunk)))
    return cursors


def _ids_template(session: Session, count: int) -> str:
    """The template of :func:`_send_ids`' statement for ``count`` ids, built once:
    parameters the resource, the stream, then each id (one parameter an id)."""
    statements = session.dialect.statements
    template = statements.get(("entry_ids", count))
    if template is None:
        rows = ", ".join(["(?)"] * count)
        # One id is a plain row: less work for the database than a join with one row.
        source = (
            "VALUES (?, ?, ?)"
            if count == 1
            else f"SELECT ?, ?, v.column1 FROM (VALUES {rows}) AS v WHERE true"
        )
        template = statements["entry_ids", count] = (
            f"INSERT INTO {{ids}} (resource, stream, entry_id) {source} "
            "ON CONFLICT (resource, stream, entry_id) DO NOTHING"
        )
    return template


def _check_ids(resource: Resource, stream: str, ids: list[str], went_in: Sequence[Any]) -> None:
    """A ``ConflictError`` naming the first of ``ids`` that did not go in: it was already
    in the live stream."""
    entered = {str(entry_id) for entry_id in went_in}
    if len(entered) != len(ids):
        known = next(entry_id for entry_id in ids if entry_id not in entered)
        raise ConflictError(f"duplicate stream entry identity: {resource.id}/{stream}/{known}")


def read(
    session: Session, resource: Resource, stream: str, after: int, limit: int | None
) -> list[StreamEntry]:
    """Live entries above position ``after``, ascending."""
    return entries(session.all(*read_statement(session, resource, stream, after, limit)))


def entries(rows: Sequence[Any]) -> list[StreamEntry]:
    """The entries of the rows :func:`read_statement`'s statement returns."""
    return [codec.stream_state(int(position), state) for position, state in rows]


def read_statement(
    session: Session, resource: Resource, stream: str, after: int, limit: int | None
) -> tuple[str, list[object]]:
    """The statement (template and parameters) of :func:`read`."""
    params: list[object] = [
        session.dialect.originator(events.entry_stream(resource.id, stream)),
        after,
        after,
        events.STREAM_ENTRY_APPENDED,
        resource.id,
        stream,
    ]
    query = _READ
    if limit is not None:
        query = _READ_SOME
        params.append(limit)
    return query, params


# One statement, so head, base and events come from one snapshot even under READ
# COMMITTED. ``after`` is clamped to the head (nothing lies above it anyway), so that
# base + after never leaves the signed 64-bit range of a restarted stream. Constants: the
# session finds their finished text by a hash computed once, not per read.
_READ = (
    "SELECT e.originator_version - h.base, e.state FROM {heads} h JOIN {events} e "
    "ON e.originator_id = ? "
    "AND e.originator_version > h.base + CASE WHEN ? < h.head THEN ? ELSE h.head END "
    "AND e.originator_version <= h.base + h.head AND e.topic = ? "
    "WHERE h.resource = ? AND h.stream = ? ORDER BY e.originator_version"
)
_READ_SOME = _READ + " LIMIT ?"


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


def names(session: Session, resource: Resource, after: str | None, limit: int) -> list[str]:
    """The streams of ``resource`` with a head row, ascending, after ``after``."""
    rows = session.all(
        "SELECT stream FROM {heads} WHERE resource = ? AND stream > ? ORDER BY stream LIMIT ?",
        (resource.id, "" if after is None else after, limit),
    )
    return [str(row[0]) for row in rows]


def purge(session: Session, resource: Resource, stream: str, before: int | None) -> Purge | None:
    """Purge the whole stream (``before`` ``None``: deleted first) or its entries below
    position ``before``; see :meth:`StorageDriver.purge_stream`."""
    originator = events.entry_stream(resource.id, stream)
    if before is None:
        delete(session, resource, stream)
        return purges.remove(session, originator, "streams", resource.id, stream)
    current, base = _locked_head(session, resource, stream)
    below = base + min(before, current + 1)
    rows = session.all(
        "SELECT state FROM {events} WHERE originator_id = ? AND originator_version > ? "
        "AND originator_version < ? AND topic = ?",
        (session.dialect.originator(originator), base, below, events.STREAM_ENTRY_APPENDED),
    )
    for (state,) in rows:
        session.execute(
            "DELETE FROM {ids} WHERE resource = ? AND stream = ? AND entry_id = ?",
            (resource.id, stream, str(events.decode(state)["id"])),
        )
    return purges.remove(
        session, originator, "streams", resource.id, stream, below=below, before=before
    )


def _locked_head(session: Session, resource: Resource, stream: str) -> tuple[int, int]:
    row = session.one(
        "SELECT head, base FROM {heads} WHERE resource = ? AND stream = ?"
        + session.dialect.for_update,
        (resource.id, stream),
    )
    return (0, 0) if row is None else (int(row[0]), int(row[1]))
