"""Records: each write appends to the key's log stream, then updates ``storage_records``.

Conflicts are found by queries before anything is written (a duplicate key,
a stale revision, a failed attribute precondition, a unique constraint), so
an expected conflict never aborts a PostgreSQL transaction with a statement
error. The database still has the last word on races: the event's primary
key refuses a second writer of the same log version, and the generated
partial unique indexes refuse a second row a constraint forbids; such a
violation is reported as the ``UniqueConstraintError`` of the constraint
whose index it names. Replace and delete re-read the row ``FOR UPDATE``
(PostgreSQL) after the SPI core locked the guard: parent lock, then child.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from nenjim.infrastructure.storage.canonical_json import dumps as canonical_text
from nenjim.infrastructure.storage.conditions import _Unchecked
from nenjim.infrastructure.storage.driver import HEAD, REVISION, AttributeValues, CheckRead
from nenjim.infrastructure.storage.entries import Attributes, RecordedEntry, RecordEntry
from nenjim.infrastructure.storage.errors import ConflictError, NotFoundError, UniqueConstraintError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.rules import attributes_match, check_preconditions
from nenjim.infrastructure.storage.scalars import key_prefix_end
from nenjim.infrastructure.storage.selection import Selection
from nenjim.infrastructure.storage.sql import codec, events, schema
from nenjim.infrastructure.storage.sql.dialect import (
    Dialect,
    as_template,
    dumps,
    primary_key,
)
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Guard, RecordGuard, Row, Session

_COLUMNS = "key, revision, attributes, record_type, format_version, payload"

_EVENTS_KEY = primary_key("events")
"""The log's key (originator, version): an insert's one statement fails on it when the
row's version was taken after the statement's snapshot."""


_LOCK_GUARD = "SELECT 1 FROM {records} WHERE resource = ? AND key = ?"

_REVISION = "SELECT revision FROM {records} WHERE resource = ? AND key = ?"


def missing_anchor(resource_id: str, key: str) -> NotFoundError:
    """The error of a guard whose anchor row ``(resource_id, key)`` is missing."""
    return NotFoundError(
        f"guard record not found: {resource_id}/{key}", resource=resource_id, key=key
    )


def missing_row(resource_id: str, key: str) -> NotFoundError:
    """The error of a write whose own row ``(resource_id, key)`` is missing."""
    return NotFoundError(f"record not found: {resource_id}/{key}", resource=resource_id, key=key)


def lock_guard(session: Session, resource: Resource, key: str) -> None:
    """Lock anchor row ``key`` until the transaction ends; NotFoundError if missing."""
    lock_anchor(session, (resource.id, key))


def lock_anchor(session: Session, anchor: tuple[str, ...]) -> None:
    """Lock the anchor row ``(resource id, key)`` until the transaction ends;
    NotFoundError if missing."""
    if session.one(_LOCK_GUARD + session.dialect.for_update, anchor) is None:
        raise missing_anchor(anchor[0], anchor[1])


def send_guards(session: Session) -> list[tuple[Guard, Any]]:
    """Send the locks of ``session.guards`` (inside :meth:`Session.pipeline`); their cursors."""
    pending, session.guards = session.guards, []
    dialect = session.dialect
    sent = []
    for guard in pending:
        if isinstance(guard, RecordGuard):
            params = (guard.resource, guard.key, guard.anchor)
            cursor = session.send(_lock_named_guard(session, guard), params)
        else:
            cursor = session.send(_LOCK_GUARD + dialect.for_update, guard)
        sent.append((guard, cursor))
    return sent


def _lock_named_guard(session: Session, guard: RecordGuard) -> str:
    """The row's value of ``via`` and the anchor it names, locked (NULL if missing).

    Parameters: the row's resource and key, then the anchor resource. One
    statement, so the value read is the one the lock looked up.
    """
    dialect = session.dialect
    via = as_template(dialect.attribute(guard.via))
    if not dialect.for_update:
        # The transaction already holds the lock (SQLite): finding the anchor is enough.
        # A scalar subquery, as SQLite would plan a join again at every execution.
        return (
            "SELECT o.via, (SELECT g.key FROM {records} g WHERE g.resource = ?3 "
            "AND g.key = o.via) FROM (SELECT " + via + " AS via FROM {records} "
            "WHERE resource = ?1 AND key = ?2) o"
        )
    # A row lock may not take the nullable side of an outer join; a lateral subquery may.
    return (
        "SELECT o.via, g.key FROM (SELECT " + via + " AS via FROM {records} WHERE "
        "resource = ? AND key = ?) o LEFT JOIN LATERAL (SELECT key FROM {records} "
        "WHERE resource = ? AND key = o.via" + dialect.for_update + ") g ON true"
    )


def check_guards(sent: list[tuple[Guard, Any]]) -> None:
    """NotFoundError for the first anchor (or named row) :func:`send_guards` did not find."""
    for guard, cursor in sent:
        if isinstance(guard, RecordGuard):
            row = cursor.fetchone()
            if row is None:
                raise missing_row(guard.resource, guard.key)
            named, locked = row
            if named is not None and locked is None:
                raise missing_anchor(guard.anchor, named)
        elif not cursor.fetchall():
            raise missing_anchor(guard[0], guard[1])


def lock_guards(session: Session) -> None:
    """Lock the anchors of ``session.guards`` now (one round trip for all)."""
    guards = session.guards
    if len(guards) == 1 and not isinstance(guards[0], RecordGuard):  # the usual one
        session.guards = []
        lock_anchor(session, guards[0])
    elif guards:
        with session.pipeline():
            sent = send_guards(session)
        check_guards(sent)


def read(session: Session, resource: Resource, key: str) -> RecordEntry | None:
    """The stored row, or ``None`` (no lock)."""
    return read_answer(session, resource, session.all(*read_statement(resource, key)))


_READ = "SELECT " + _COLUMNS + " FROM {records} WHERE resource = ? AND key = ?"


def read_statement(resource: Resource, key: str) -> tuple[str, list[object]]:
    """The statement (template and parameters) of :func:`read`."""
    return _READ, [resource.id, key]


def read_answer(session: Session, resource: Resource, rows: Sequence[Any]) -> RecordEntry | None:
    """The row :func:`read_statement`'s statement returned, or ``None``."""
    return _entry(session, resource, rows[0]) if rows else None


def revision(session: Session, resource: Resource, key: str) -> int | None:
    """The stored row's revision, or ``None`` (no decoding)."""
    row = session.one(_REVISION, (resource.id, key))
    return None if row is None else int(row[0])


def attributes(session: Session, resource: Resource, key: str) -> Attributes | None:
    """The stored row's attributes, checked, or ``None`` (no lock, no payload decoding)."""
    row = session.one(
        "SELECT attributes FROM {records} WHERE resource = ? AND key = ?", (resource.id, key)
    )
    return None if row is None else _attributes(session, resource, row[0])


def insert(session: Session, layout: Layout, resource: Resource, entry: RecordEntry) -> RecordEntry:
    """Store a new row as the next event of the key's log stream.

    The row goes in first, numbered with the log stream's next version in the
    same statement; no row inserted means the key is taken. The event then
    takes that version. A conflict raised after a write needs no undo: it
    fails the scope, which rolls back.
    """
    covering = _covering(resource, entry)
    if covering:
        lock_guards(session)  # the anchor before the rows it guards
    try:
        _raise_unique(resource, _send_unique(session, resource, entry, covering))
    except UniqueConstraintError:
        if _exists(session, resource, entry.key):  # a duplicate key is the first conflict
            raise ConflictError(f"duplicate record identity: {resource.id}/{entry.key}") from None
        raise
    dialect = session.dialect
    originator = events.record_originator(dialect, resource.id, entry.key)
    attributes = events.attributes_text(entry)
    row = (resource.id, entry.key, entry.revision, *_values(session, entry, attributes), originator)
    state = events.record_state(resource.id, entry, attributes).encode()
    event = (originator, events.RECORD_INSERTED, state)
    anchor = _anchor(session, resource, entry)
    guarded, unguarded = dialect.insert_guarded_row, dialect.insert_row
    if anchor is not None and guarded is not None and unguarded is not None:
        # One statement, not a pipeline: the anchor's lock, if any, goes in with the row.
        session.guards = []
        template = guarded if anchor else unguarded
        try:
            with _UniqueViolations(layout, resource):
                cursor = session.alone(template, (*anchor, *row, *event))
        except Exception as error:
            if dialect.violated_index(error) == _EVENTS_KEY:  # the version: taken since
                raise ConflictError(
                    f"record insert conflicted: {resource.id}/{entry.key}"
                ) from error
            raise
        ((inserted, written, *anchored),) = cursor.fetchall()
        if anchored and not anchored[0]:
            raise missing_anchor(anchor[0], anchor[1])
        _inserted(resource, entry, inserted, written)
        return entry
    anchored = dialect.append_event_at_anchored_row
    if anchor and anchored is not None:
        # The event's statement finds the anchor: one statement fewer. A write that did
        # not go in names its first conflict after: a missing anchor (whatever the row
        # did, the error fails the scope, which rolls it back), then the key or version.
        session.guards = []
        with _UniqueViolations(layout, resource):
            inserted = session.execute(_INSERT_ROW, row)
            written = session.execute(anchored, (*event, *row[:2], *anchor)) if inserted else 0
        if not written:
            lock_anchor(session, anchor)
        _inserted(resource, entry, inserted, written)
        return entry
    if dialect.insert_row is not None and not session.guards:
        # One statement, the row and its event: no pipeline to send it with others.
        with _UniqueViolations(layout, resource):
            answer = session.one(dialect.insert_row, (*row, *event))
        assert answer is not None  # the statement's one row of counts
        _inserted(resource, entry, answer[0], answer[1])
        return entry
    with _UniqueViolations(layout, resource), session.pipeline():
        guards = send_guards(session)
        if dialect.insert_row is not None:  # the row and its event in one statement
            both = session.send(dialect.insert_row, (*row, *event))
        else:
            inserted_row = session.send(_INSERT_ROW, row)
            # At the version the row took; a no-op if the row was not ours to insert.
            logged = session.send(dialect.append_event_at_row, (*event, resource.id, entry.key))
    check_guards(guards)
    if dialect.insert_row is not None:
        inserted, written = both.fetchone()
    else:
        inserted, written = inserted_row.rowcount, logged.rowcount
    _inserted(resource, entry, inserted, written)
    return entry


def _inserted(resource: Resource, entry: RecordEntry, inserted: int, written: int) -> None:
    """A conflict unless the row went in (``inserted``) and its event did (``written``)."""
    if inserted != 1:
        raise ConflictError(f"duplicate record identity: {resource.id}/{entry.key}")
    if written != 1:
        # Another writer took this version since we looked (on PostgreSQL it
        # committed while this insert waited for it).
        raise ConflictError(f"record insert conflicted: {resource.id}/{entry.key}")


def replace(
    session: Session,
    layout: Layout,
    resource: Resource,
    entry: RecordEntry,
    *,
    expected_revision: int,
    expected_attributes: AttributeValues,
) -> RecordEntry:
    """CAS on the locked row: revision, preconditions, unique, then the next log version.

    The stored payload is neither read nor decoded: the write replaces it. The
    guard lock, the row lock and the unique pre-checks go out together (one
    round trip on PostgreSQL), in that order; their answers are checked in
    that order too, so the first conflict is the one reported. Where the
    dialect has :attr:`~Dialect.replace_row` (PostgreSQL), the write goes out
    with them (a write that a check then refuses needs no undo: the error
    fails the scope, which rolls back).
    """
    dialect = session.dialect
    originator = events.record_originator(dialect, resource.id, entry.key)
    attributes = events.attributes_text(entry)
    state = events.record_state(resource.id, entry, attributes).encode("utf-8")
    values = (entry.revision, *_values(session, entry, attributes))
    event = (originator, events.RECORD_REPLACED, state)
    if _replace_in_place(
        session,
        layout,
        resource,
        entry,
        expected_revision=expected_revision,
        expected_attributes=expected_attributes,
        event=event,
        write=values,
    ):
        return entry
    failed: Exception | None = None
    try:
        with session.pipeline():
            guards = send_guards(session)  # parent lock, then child
            locked = session.send(
                "SELECT revision, attributes, log_version FROM {records} WHERE resource = ? "
                "AND key = ?" + dialect.for_update,
                (resource.id, entry.key),
            )
            clashes = _send_unique(session, resource, entry, _covering(resource, entry))
            if dialect.replace_row is not None:
                where = (resource.id, entry.key)
                checked = (*where, expected_revision, originator, events.RECORD_REPLACED, state)
                replaced = session.send(dialect.replace_row, (*checked, *values, *where))
    except Exception as error:
        # A generated unique index refused the write: reported after the checks that
        # come first, or as its constraint's error if none of them fails.
        if layout.constraint(dialect.violated_index(error)) is None:
            raise
        failed = error
    check_guards(guards)
    row = locked.fetchone()
    if row is None:
        raise missing_row(resource.id, entry.key)
    revision, log_version = int(row[0]), int(row[2])
    if revision != expected_revision:
        raise ConflictError(
            f"record revision conflict: {resource.id}/{entry.key} is at "
            f"{revision}, expected {expected_revision}"
        )
    current = _attributes(session, resource, row[1])
    check_preconditions(resource, current, entry, expected_attributes)
    _raise_unique(resource, clashes)
    if failed is not None:
        with _UniqueViolations(layout, resource):
            raise failed
    if dialect.replace_row is not None:
        written = replaced.rowcount == 1
    else:
        versioned = (originator, log_version + 1, events.RECORD_REPLACED, state)
        with _UniqueViolations(layout, resource):
            written = session.execute(dialect.append_event, versioned) == 1
            if written:
                session.execute(_UPDATE_ROW, (*values, log_version + 1, resource.id, entry.key))
    if not written:
        raise ConflictError(f"record revision conflict: {resource.id}/{entry.key} changed")
    return entry


def _replace_in_place(
    session: Session,
    layout: Layout,
    resource: Resource,
    entry: RecordEntry,
    *,
    expected_revision: int,
    expected_attributes: AttributeValues,
    event: tuple[object, str, bytes],
    write: tuple[object, ...],
) -> bool:
    """A replace written by the statement that checks it; ``False`` if a check failed (or
    could not be written into it), with nothing written.

    The usual replace passes every check, so it is written at once, without reading
    the row first: the ``UPDATE`` holds the checks in its ``WHERE`` (the revision;
    each immutable attribute and each expected one, compared as JSON values; the
    anchor of the guard, locked first where the database locks rows) and the event
    (originator, topic, state) goes in at the row's next log version; ``write`` is the
    row's new revision, attributes, record type, format version and payload. A ``False``
    sends the replace down the full path, which reads the row and reports the first
    check that fails. A unique constraint is left to its generated index: the other
    checks passed, so its violation is the first conflict. Where the dialect has an
    ``UPDATE`` that keeps the stored attributes (SQLite), it goes first: a replace that
    writes the attributes the row holds then writes none of their index entries, and
    one that changes them costs that statement more.
    """
    anchor = _anchor(session, resource, entry)
    if anchor is None:
        return False
    dialect = session.dialect
    shape = ("replace", resource.id, tuple(expected_attributes), bool(anchor))
    both = dialect.replace_statements.get(shape)
    if both is None:
        terms = _checked_terms(dialect, resource, tuple(expected_attributes))
        both = dialect.replace_statements[shape] = (
            dialect.checked_replace(terms, guarded=bool(anchor)),
            dialect.checked_replace_keeping_attributes(terms, guarded=bool(anchor)),
        )
    query, kept = both
    where = (resource.id, entry.key)
    checked: list[object] = [*where, expected_revision]
    # Loops, not generators: every replace builds these.
    stored = entry.attributes
    for name in resource.immutable_attributes:
        checked.append(dumps(stored[name]))
    for value in expected_attributes.values():
        checked.append(dumps(value))
    with _UniqueViolations(layout, resource):
        if dialect.replace_row is None:  # the row, then its event at the row's version
            # The usual replace keeps its attributes: tried first, it writes no index.
            revision, attributes, *envelope = write
            kept_params = (revision, *envelope, attributes, *checked, *anchor)
            unchanged = kept is not None and session.execute(kept, kept_params) == 1
            if not unchanged and session.execute(query, (*write, *checked, *anchor)) != 1:
                return False
            written = session.execute(dialect.append_event_at_row, (*event, *where)) == 1
        else:  # the anchor's lock, the checked row, its event and the write: one statement
            if session.alone(query, (*anchor, *checked, *event, *write, *where)).rowcount != 1:
                return False
            written = True
    session.guards = []
    if not written:
        raise ConflictError(f"record revision conflict: {resource.id}/{entry.key} changed")
    return True


def _anchor(session: Session, resource: Resource, entry: RecordEntry) -> tuple[str, ...] | None:
    """The anchor the guards queued for a write of ``entry`` lock, as ``(resource, key)``
    (``()`` if there is none to lock); ``None`` if they are not the write's own (several,
    or a row's other than ``entry``'s)."""
    guards = session.guards
    if not guards:
        return ()
    if len(guards) > 1:
        return None
    (guard,) = guards
    if not isinstance(guard, RecordGuard):
        return guard
    if (guard.resource, guard.key) != (resource.id, entry.key):
        return None
    # The attribute is immutable: the row holds the value the replace writes, or the
    # statement's check of it refuses the write.
    named = entry.attributes[guard.via]
    return () if named is None else (guard.anchor, str(named))


def _checked_terms(dialect: Dialect, resource: Resource, expected: tuple[str, ...]) -> str:
    """The `` AND`` checks of :func:`_replace_in_place`: each immutable attribute and each
    expected one, compared as JSON values (one parameter each)."""
    return "".join(
        " AND " + dialect.attribute_equals_json(name)
        for name in (*resource.immutable_attributes, *expected)
    )


_INSERT_ROW = (
    "INSERT INTO {records} (resource, key, revision, attributes, record_type, "
    "format_version, payload, log_version) "
    "SELECT ?, ?, ?, ?, ?, ?, ?, coalesce(max(originator_version), 0) + 1 "
    "FROM {events} WHERE originator_id = ? "
    "ON CONFLICT (resource, key) DO NOTHING"
)
"""Parameters: resource, key, revision, attributes, record type, format version, payload,
then the originator of the key's log stream, whose next version the row takes."""

_UPDATE_ROW = (
    "UPDATE {records} SET revision = ?, attributes = ?, record_type = ?, "
    "format_version = ?, payload = ?, log_version = ? WHERE resource = ? AND key = ?"
)
"""Parameters: revision, attributes, record type, format version, payload, log version,
resource, key."""


def delete(
    session: Session, resource: Resource, key: str, expected_revision: int | _Unchecked
) -> None:
    """Tombstone the locked row; a checked delete needs the row at that revision."""
    row = _locked(session, resource, key, "revision, log_version")
    checked = isinstance(expected_revision, int)
    if row is None:
        if checked:
            raise ConflictError(
                f"record deletion revision conflict: {resource.id}/{key} is missing"
            )
        return
    revision, log_version = int(row[0]), int(row[1])
    if checked and revision != expected_revision:
        raise ConflictError(
            f"record deletion revision conflict: {resource.id}/{key} is at "
            f"{revision}, expected {expected_revision}"
        )
    _tombstone(session, resource, key, revision, log_version)


def scan(
    session: Session,
    layout: Layout,
    resource: Resource,
    equals: AttributeValues,
    *,
    after: str | None,
    limit: int | None,
    key_prefix: str | None = None,
) -> list[RecordEntry]:
    """Rows equal on ``equals`` whose keys start with ``key_prefix``, ascending by key
    bytes, after the exclusive cursor."""
    query, params = scan_statement(
        session, layout, resource, equals, after=after, limit=limit, key_prefix=key_prefix
    )
    return scanned(session, resource, session.all(query, params))


def scanned(session: Session, resource: Resource, rows: Sequence[Any]) -> list[RecordEntry]:
    """The entries of the rows :func:`scan_statement`'s statement returned."""
    return [_entry(session, resource, row) for row in rows]


def scan_statement(
    session: Session,
    layout: Layout,
    resource: Resource,
    equals: AttributeValues,
    *,
    after: str | None,
    limit: int | None,
    key_prefix: str | None = None,
) -> tuple[str, list[object]]:
    """The statement (template and parameters) of :func:`scan`."""
    dialect = session.dialect
    shape, params = _shaped(session, equals)
    prefix_terms, prefix_params = _key_range(key_prefix)
    # The text depends on the shape only: built once per shape (a scan per read of a thread).
    key = ("scan", resource.id, after is not None, limit is not None, prefix_terms, *shape)
    query = dialect.statements.get(key)
    if query is None:
        terms, _ = _matching(dialect, resource, equals)
        source = layout.scan_source(resource.id, equals)
        query = "SELECT " + _COLUMNS + " FROM " + source + terms + prefix_terms
        if after is not None:
            query += " AND key > ?"
        query += " ORDER BY key"
        if limit is not None:
            query += " LIMIT ?"
        dialect.statements[key] = query
    params.extend(prefix_params)
    if after is not None:
        params.append(after)
    if limit is not None:
        params.append(limit)
    return query, params


def _key_range(key_prefix: str | None) -> tuple[str, list[object]]:
    """The terms (and their parameters) that keep the keys starting with ``key_prefix``:
    a range of the key, which the primary key serves (keys compare by UTF-8 bytes)."""
    if key_prefix is None:
        return "", []
    end = key_prefix_end(key_prefix)
    if end is None:
        return " AND key >= ?", [key_prefix]
    return " AND key >= ? AND key < ?", [key_prefix, end]


def select(
    session: Session,
    layout: Layout,
    resource: Resource,
    equals: AttributeValues,
    selection: Selection,
    *,
    key_prefix: str | None = None,
) -> list[RecordEntry]:
    """The page ``selection`` gives of the rows equal on ``equals`` whose keys start with
    ``key_prefix``, tested, ordered and cut by the database: only the page's rows are read
    and decoded."""
    dialect = session.dialect
    terms, params = _matching(dialect, resource, equals)
    prefix_terms, prefix_params = _key_range(key_prefix)
    source = layout.scan_source(resource.id, equals) + terms + prefix_terms
    params.extend(prefix_params)
    for test in selection.tests:
        if test.operator == "eq" and dialect.holds_text is not None:
            # A payload whose field equals the operand holds the member's canonical text
            # (the column is canonical JSON): looking for it is a byte search, where
            # testing the field parses the payload. Rows without it go before the parse.
            source += " AND " + dialect.holds_text
            params.append(canonical_text(test.path[-1]) + ":" + canonical_text(test.operand))
    query = "SELECT " + _COLUMNS + " FROM " + dialect.selected_rows(_COLUMNS, source)
    for test in selection.tests:
        term, bound = dialect.field_test(test)
        query += " AND " + term
        params.extend(bound)
    if selection.order is not None:
        expression, bound = dialect.field_order(selection.order)
        query += " ORDER BY " + expression + ", key"
        params.extend(bound)
    else:
        query += " ORDER BY key"
    if selection.limit is not None or selection.offset:
        query += " LIMIT ? OFFSET ?"
        params.append(dialect.no_limit if selection.limit is None else selection.limit)
        params.append(selection.offset)
    return [_entry(session, resource, row) for row in session.all(query, params)]


def scan_keys(
    session: Session,
    layout: Layout,
    resource: Resource,
    equals: AttributeValues,
    *,
    after: str | None,
    limit: int | None,
    key_prefix: str | None = None,
) -> list[str]:
    """The keys :func:`scan` would return, in its order: no row is decoded."""
    terms, params = _matching(session.dialect, resource, equals)
    prefix_terms, prefix_params = _key_range(key_prefix)
    source = layout.scan_source(resource.id, equals)
    query = "SELECT key FROM " + source + terms + prefix_terms
    params.extend(prefix_params)
    if after is not None:
        query += " AND key > ?"
        params.append(after)
    query += " ORDER BY key"
    if limit is not None:
        query += " LIMIT ?"
        params.append(limit)
    return [key for (key,) in session.all(query, params)]


def any_matching(
    session: Session, layout: Layout, resource: Resource, equals: AttributeValues
) -> bool:
    """Whether a row is equal on ``equals`` (its index answers; no row is read)."""
    dialect = session.dialect
    shape, bound = _shaped(session, equals)
    key = ("any", resource.id, *shape)
    query = dialect.statements.get(key)
    if query is None:
        source = layout.scan_source(resource.id, equals)
        terms, _ = _matching(session.dialect, resource, equals)
        query = dialect.statements[key] = "SELECT 1 FROM " + source + terms + " LIMIT 1"
    return session.one(query, bound) is not None


class PreparedCheckRead(NamedTuple):
    """A read of ``check()`` as :func:`check_reads` sends it: its kind, its column of the
    statement (a scalar subquery) and that column's parameters. Made once per condition
    and backend."""

    kind: str
    column: str
    params: tuple[object, ...]


def prepared_check_read(dialect: Dialect, layout: Layout, read: CheckRead) -> PreparedCheckRead:
    """``read`` (see :data:`~nenjim.infrastructure.storage.driver.CheckRead`) as a column of
    :func:`check_reads`' statement."""
    kind, resource, argument = read
    if kind == REVISION:
        column = "(" + _REVISION + ")"
        return PreparedCheckRead(kind, column, (resource.id, argument))
    if kind == HEAD:
        column = "(SELECT head FROM {heads} WHERE resource = ? AND stream = ?)"
        return PreparedCheckRead(kind, column, (resource.id, argument))
    source = layout.scan_source(resource.id, argument)
    terms, params = _matching(dialect, resource, argument)
    return PreparedCheckRead(kind, "EXISTS (SELECT 1 FROM " + source + terms + ")", tuple(params))


_ANCHOR_COLUMN = "(" + _LOCK_GUARD + ")"


def check_reads(
    session: Session, anchors: Sequence[tuple[Resource, str]], reads: Sequence[PreparedCheckRead]
) -> list[Any]:
    """:meth:`~nenjim.infrastructure.storage.driver.StorageDriver.check_reads` in one statement,
    for a transaction that already holds the database's only write lock (finding an
    anchor is locking it): one column per anchor, then one per read, its text built once
    per shape."""
    if not anchors and not reads:
        return []
    columns = tuple([read.column for read in reads])
    shape = ("check", len(anchors), columns)
    statements = session.dialect.statements
    query = statements.get(shape)
    if query is None:
        query = statements[shape] = "SELECT " + ", ".join(
            (_ANCHOR_COLUMN,) * len(anchors) + columns
        )
    params: list[object] = []
    for resource, key in anchors:
        params += (resource.id, key)
    for read in reads:
        params += read.params
    row = session.one(query, params)
    assert row is not None  # a SELECT without FROM yields one row
    for (resource, key), found in zip(anchors, row, strict=False):
        if found is None:
            raise missing_anchor(resource.id, key)
    answers: list[Any] = []
    for read, value in zip(reads, row[len(anchors) :], strict=True):
        kind = read.kind
        if kind == REVISION:
            answers.append(None if value is None else int(value))
        elif kind == HEAD:
            answers.append(0 if value is None else int(value))
        else:
            answers.append(bool(value))
    return answers


def delete_matching(
    session: Session, layout: Layout, resource: Resource, equals: AttributeValues
) -> None:
    """Tombstone every row equal on ``equals`` (locked in key order)."""
    terms, params = _matching(session.dialect, resource, equals)
    source = layout.scan_source(resource.id, equals)
    rows = session.all(
        "SELECT key, revision, log_version FROM "
        + source
        + terms
        + " ORDER BY key"
        + session.dialect.for_update,
        params,
    )
    for key, revision, log_version in rows:
        _tombstone(session, resource, key, int(revision), int(log_version))


def history(session: Session, resource: Resource, key: str) -> list[RecordedEntry]:
    """Every revision written under ``key`` (not the deletes), from its log stream."""
    return [
        codec.recorded_event(resource, state)
        for topic, state in events.history(session, events.record_stream(resource.id, key))
        if topic in events.RECORD_WRITES
    ]


def _entry(session: Session, resource: Resource, row: Row) -> RecordEntry:
    key, revision, attributes, record_type, format_version, payload = row[:6]
    checked = _attributes(session, resource, attributes)
    return codec.record_row((key, revision, checked, record_type, format_version, payload))


def _attributes(session: Session, resource: Resource, stored: object) -> Attributes:
    if isinstance(stored, str) and len(stored) <= codec.MEMO_TEXT:
        return _attributes_of_text(session.dialect, resource, stored)
    return codec.attributes(resource, session.dialect.load_json(stored))


@lru_cache(maxsize=codec.MEMO_ITEMS)
def _attributes_of_text(dialect: Dialect, resource: Resource, stored: str) -> Attributes:
    """A row's attributes from their JSON text, checked once per text (read-only, so shared)."""
    return codec.attributes(resource, dialect.load_json(stored))


def _values(session: Session, entry: RecordEntry, attributes: str) -> tuple[object, ...]:
    record = entry.record
    return (
        session.dialect.json(attributes),
        record.record_type,
        record.format_version,
        record.payload_json,
    )


def _exists(session: Session, resource: Resource, key: str) -> bool:
    found = session.one(
        "SELECT 1 FROM {records} WHERE resource = ? AND key = ?", (resource.id, key)
    )
    return found is not None


def _locked(session: Session, resource: Resource, key: str, columns: str) -> Row | None:
    return session.one(
        "SELECT "
        + columns
        + " FROM {records} WHERE resource = ? AND key = ?"
        + session.dialect.for_update,
        (resource.id, key),
    )


def _tombstone(
    session: Session, resource: Resource, key: str, revision: int, log_version: int
) -> None:
    originator = events.record_stream(resource.id, key)
    state = events.tombstone_state(resource.id, key, revision)
    if not events.append(session, originator, log_version + 1, events.RECORD_DELETED, state):
        raise ConflictError(f"record deletion revision conflict: {resource.id}/{key} changed")
    session.execute("DELETE FROM {records} WHERE resource = ? AND key = ?", (resource.id, key))


def _shaped(
    session: Session, values: Mapping[str, str | int | bool | None]
) -> tuple[tuple[tuple[str, bool], ...], list[object]]:
    """What the text of :func:`_matching` depends on (the names, in order, and which are
    null) and the parameters of its terms (the values that are not null), in one pass."""
    bind = session.dialect.bind
    shape, params = [], []
    for name, value in values.items():
        shape.append((name, value is None))
        if value is not None:
            params.append(bind(value))
    return tuple(shape), params


def _matching(
    dialect: Dialect, resource: Resource, values: Mapping[str, str | int | bool | None]
) -> tuple[str, list[object]]:
    """`` AND <attribute> = ?`` terms (``IS NULL`` for None) and their parameters."""
    terms, params = [], []
    for name, value in values.items():
        expression = as_template(dialect.attribute(name))
        if value is None:
            terms.append(f" AND {expression} IS NULL")
        else:
            terms.append(f" AND {expression} = ?")
            params.append(dialect.bind(value))
    return "".join(terms), params


def _covering(resource: Resource, entry: RecordEntry) -> list[Mapping[str, Any]]:
    """The unique constraints of ``resource`` that cover ``entry``: its row matches their
    ``where`` and holds no null in their fields (nulls are distinct)."""
    attributes = entry.attributes
    # Loops, not generators: every insert and replace asks.
    covering = []
    for constraint in resource.unique:
        for name in constraint["fields"]:
            if attributes[name] is None:
                break
        else:
            if attributes_match(attributes, constraint["where"]):
                covering.append(constraint)
    return covering


def _send_unique(
    session: Session, resource: Resource, entry: RecordEntry, covering: list[Mapping[str, Any]]
) -> list[tuple[str, Any]]:
    """Send one query per unique constraint in ``covering`` (together, inside
    :meth:`Session.pipeline`): its name and the cursor of the clashing row."""
    sent = []
    for constraint in covering:
        fields, where = constraint["fields"], constraint["where"]
        values = {**where, **{name: entry.attributes[name] for name in fields}}
        shape, bound = _shaped(session, values)
        key = ("unique", resource.id, constraint["name"], *shape)
        query = session.dialect.statements.get(key)
        if query is None:
            terms, _ = _matching(session.dialect, resource, values)
            source = schema.unique_source(session.dialect, resource, constraint)
            query = session.dialect.statements[key] = (
                "SELECT 1 FROM " + source + "resource = ? AND key <> ?" + terms + " LIMIT 1"
            )
        params = [resource.id, entry.key, *bound]
        sent.append((constraint["name"], session.send(query, params)))
    return sent


def _raise_unique(resource: Resource, sent: list[tuple[str, Any]]) -> None:
    """UniqueConstraintError for the first constraint :func:`_send_unique` found held."""
    for name, cursor in sent:
        if cursor.fetchone() is not None:
            raise UniqueConstraintError(resource.id, name)


class _UniqueViolations:
    """Report a generated unique index's violation as its constraint's error.

    A class, not a ``@contextmanager`` generator: every record write enters
    one, and a generator costs several times as much to enter and leave.
    """

    __slots__ = ("layout", "resource")

    def __init__(self, layout: Layout, resource: Resource) -> None:
        self.layout = layout
        self.resource = resource

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if not isinstance(error, Exception):
            return  # nothing raised, or not an error to map (KeyboardInterrupt and the like)
        layout = self.layout
        constraint = layout.constraint(layout.dialect.violated_index(error))
        if constraint is not None:
            raise UniqueConstraintError(self.resource.id, constraint) from error
