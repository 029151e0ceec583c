"""What differs between SQLite and PostgreSQL, behind one small interface.

Each database's dialect is a module of its own (``sqlite_dialect``,
``postgres_dialect``), imported only with its driver: this one imports none.

Statements are written once as templates: ``?`` placeholders and ``{table}``
names (``{events}``, ``{records}``, ``{heads}``, ``{ids}``, ``{blobs}``,
``{versions}``, ``{generated}``). A dialect fills in its (schema-qualified)
table names and its placeholder style, and supplies the few expressions
that differ: reading one attribute out of the JSON column, binding a value
to compare with it, JSON and UUID parameters, row locks, and finding the
index a unique violation names.

Attribute names reach SQL text only inside string literals (a JSON path on
SQLite, a key on PostgreSQL), and resource ids only as bound parameters,
through :meth:`Dialect.quote` (in generated DDL) or
:meth:`Dialect.template_literal` (in statement templates), so no catalog
value can inject SQL. Any attribute name a ``Resource`` accepts can be read
this way: it holds no ``"``, ``\\`` or control character, which JSON text
would write escaped.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from nenjim.infrastructure.log.compact_json import compact_encoder
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.selection import FieldOrder, FieldTest
from nenjim.infrastructure.store.versions import SCHEMA_TABLE

TABLE_NAMES = {
    "events": "storage_events",
    "records": "storage_records",
    "heads": "storage_stream_heads",
    "ids": "storage_stream_ids",
    "blobs": "storage_blobs",
    "versions": SCHEMA_TABLE,
    "generated": "storage_generated_indexes",
}

Scalar = str | int | bool


def primary_key(table: str) -> str:
    """The name PostgreSQL gives the primary key of storage table ``table`` (a key of
    :data:`TABLE_NAMES`), as :meth:`Dialect.violated_index` reports it."""
    return f"{TABLE_NAMES[table]}_pkey"


dumps: Callable[[Any], str] = compact_encoder(allow_nan=False)
"""Compact JSON text (non-ASCII kept as is; NaN and infinities refused)."""


_NO_ROUND_TRIPS: AbstractContextManager[Any] = nullcontext()
"""The pipeline of a database without round trips: one reusable context that does nothing."""


ORDER_COMPARISONS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
"""The SQL comparison of each ordered field test."""


def as_template(sql_text: str) -> str:
    """Literal SQL made safe as (part of) a statement template: braces doubled, so that
    :meth:`Dialect.sql` fills in table names only."""
    return sql_text.replace("{", "{{").replace("}", "}}")


class Dialect(ABC):
    """SQL text and value conversions of one database."""

    for_update: str
    """Appended to a SELECT that must lock the rows it reads."""

    append_event: str
    """Insert one event; affects no row when its (originator, version) exists."""

    append_event_at_row: str
    """Insert one event at the ``log_version`` of the records row ``(resource, key)``;
    affects no row when that (originator, version) exists. Needed only where
    :attr:`insert_row` and :attr:`replace_row` are ``None``."""

    insert_row: str | None
    """Insert a records row (``resource, key, revision, attributes, record_type,
    format_version, payload``, then the originator of its log stream, whose next version
    the row takes as ``log_version``) and, only if it went in, its event at that version
    (``originator, topic, state``), in one statement. One row: the rows inserted (0 when
    the key is taken) and the events written (0 when that version exists). ``None`` where
    the database cannot (then the row and :attr:`append_event_at_row` run one after the
    other)."""

    insert_blob: str | None
    """Insert a ``storage_blobs`` row (``resource, key, data, attributes``) and, only if it
    went in, its put event (``originator, originator, topic, state``: the originator
    twice) at the next version of its log stream, in one statement that writes both or
    neither: a version taken since fails it, as the log's key. One row: the rows
    inserted (0 when the key is taken). ``None`` where the database cannot (then the row
    and the event are two statements)."""

    insert_guarded_row: str | None
    """:attr:`insert_row` under the lock of its anchor: the anchor's resource and key come
    first and are locked before the row goes in, which it does only if the anchor is
    there. One row: as :attr:`insert_row`'s, then whether the anchor was found (1 or 0).
    ``None`` where :attr:`insert_row` is, and only there."""

    append_event_at_anchored_row: str | None
    """:attr:`append_event_at_row` only if the write's anchor row is there (the anchor's
    resource and key come last), where the transaction already holds the database's only
    write lock, so finding the anchor is locking it. No event written: the anchor is
    missing or the version is taken. ``None`` where :attr:`insert_guarded_row` is not
    (that statement locks the anchor itself)."""

    replace_row: str | None
    """A replace's writes in one statement, whatever the row holds: only if the records
    row ``(resource, key)`` is at ``revision``, its next event goes in (``originator,
    topic, state``, at the row's ``log_version`` + 1) and, only if that event went in,
    the row is updated (``revision, attributes, record_type, format_version, payload``
    then ``resource, key``). Affects no row otherwise. It can go out with the checks
    it depends on, ahead of their answers. ``None`` where the database cannot (then
    the event and the row are written one after the other, after the checks)."""

    append_rows: str | None
    """An append in one statement: the head row ``(resource, stream)`` is created at the
    new head if the append expects 0, or moved from the expected head to the new one
    (resource, stream, the expected head, the new head, the new head, the expected
    head); only if it moved do its entry ids go in (resource, stream, an array of ids,
    the new head) and its events (originator, topic, arrays of positions and of states,
    the new head; each event's version is the stream's base plus its position). One
    row: the head the row was created or moved to (``NULL`` when it is at another head:
    the row is locked and left as it is), the array of ids that went in (an id already
    in the live stream does not) and the number of events written. ``None`` where the
    database cannot (then the head's move, the ids and the events are statements of
    their own)."""

    append_guarded_rows: str | None
    """:attr:`append_rows` under the lock of its anchor: the anchor's resource and key
    come first and are locked before the head row, which is created or moved only if
    the anchor is there. One row: as :attr:`append_rows`' then whether the anchor was
    found (1 or 0). ``None`` where :attr:`append_rows` is, and only there."""

    append_rows_alone: str | None
    """:attr:`append_rows` sent as a transaction of its own, all or nothing: a missing head
    row is created only by an append that expects 0, and an id already in the live
    stream or a version taken fails the statement on its key (the ids' or the log's).
    ``None`` where :attr:`append_rows` is, and only there."""

    append_guarded_rows_alone: str | None
    """:attr:`append_guarded_rows` sent as a transaction of its own, all or nothing as
    :attr:`append_rows_alone` is. ``None`` where :attr:`append_rows` is, and only there."""

    append_single: Mapping[str, str]
    """The one-entry form of each of :attr:`append_rows`, :attr:`append_guarded_rows`,
    :attr:`append_rows_alone` and :attr:`append_guarded_rows_alone`, by that statement:
    the same parameters, but the id, the position and the state are each one value, not
    an array. Empty where those are ``None``."""

    reads_in_one_statement: bool
    """Whether ``View.read_together`` sends its reads as one statement
    (:mod:`~nenjim.infrastructure.storage.sql.together`): where a statement costs a round
    trip. Elsewhere they go one after the other, which costs less than the union."""

    record_nulls: tuple[str, ...]
    """A NULL of each column a read or scan of records rows selects, typed as the column
    is (``key``, ``revision``, ``attributes``, ``record_type``, ``format_version``,
    ``payload``): where another query's rows stand beside them in one statement."""

    entry_nulls: tuple[str, ...]
    """A NULL of each column a read of a stream's entries selects (its position and
    state), typed as :attr:`record_nulls` are."""

    index_names: str
    """Select the name of every index on the storage tables (one column)."""

    dense_notification_ids: bool
    """Whether notification ids have no gaps (one writer at a time numbers them)."""

    notification_id_sequence: str | None
    """Where a sequence numbers the events (``None``: the writer numbers them itself),
    select whether the events table's ``notification_id`` column has one, the last value
    it handed out (``NULL``: none yet) and the highest stored id; one parameter, the
    events table's name."""

    def __init__(self, tables: Mapping[str, str]) -> None:
        self.tables = dict(tables)
        self.texts: dict[str, str] = {}
        """Finished text by template, filled by :meth:`sql` (a session reads it first)."""
        self.replace_statements: dict[tuple[object, ...], tuple[str, str | None]] = {}
        """A checked replace's :meth:`checked_replace` and
        :meth:`checked_replace_keeping_attributes` by shape, built once."""
        self.statements: dict[tuple[object, ...], str] = {}
        """Statement templates built once per shape (what their text depends on), not per
        call: a condition or constraint checked again and again reuses its text."""

    def append_events(self, count: int, *, anchored: bool = False) -> str:
        """Insert ``count`` events of one log stream at consecutive versions in one
        statement; skips a row whose (originator, version) exists. Parameters: the
        originator, the version before the first event's, the topic, then each event's
        state (one parameter an event). ``anchored``: only if a records row is there,
        whose resource and key come last (the transaction holds the database's only
        write lock, so finding it is locking it). Needed only where
        :attr:`append_rows` is ``None``."""
        key = f"append_events:{count}:{anchored}"
        text = self.texts.get(key)
        if text is None:
            text = self.texts[key] = self.sql(self._append_events(count, anchored))
        return text

    def _append_events(self, count: int, anchored: bool) -> str:
        """The template of :meth:`append_events`, where it is needed."""
        raise NotImplementedError(f"{type(self).__name__} appends in one statement")

    def sql(self, template: str) -> str:
        """``template`` with this database's table names and placeholders."""
        text = self.texts.get(template)
        if text is None:
            text = self.texts[template] = self._placeholders(template.format_map(self.tables))
        return text

    def load_json(self, value: Any) -> Any:
        """A JSON column's value as Python data; ``SerializationError`` if it is not JSON."""
        if not isinstance(value, str | bytes):
            return value
        try:
            return json.loads(value)
        except (ValueError, RecursionError) as error:
            raise SerializationError(f"stored JSON column is not JSON: {error!r}") from error

    def _placeholders(self, text: str) -> str:
        return text

    @abstractmethod
    def attribute(self, name: str) -> str:
        """The SQL expression reading attribute ``name`` from ``attributes`` (NULL for null),
        as DDL text (a statement template takes it through :func:`as_template`)."""

    @abstractmethod
    def attribute_equals_json(self, name: str) -> str:
        """A statement template's term true where attribute ``name`` holds the JSON value of
        one parameter, the text :func:`dumps` writes (of the same type: ``true`` is not
        ``1``); not true where the attribute is absent."""

    @abstractmethod
    def field_test(self, test: FieldTest) -> tuple[str, list[object]]:
        """A statement template's term, over the rows of :meth:`selected_rows`, true exactly
        where the row's payload passes ``test`` (:meth:`FieldTest.holds`), and its
        parameters."""

    @abstractmethod
    def field_order(self, order: FieldOrder) -> tuple[str, list[object]]:
        """An ``ORDER BY`` expression over the rows of :meth:`selected_rows` giving
        ``order`` (with its direction, ``key`` to follow), and its parameters."""

    def selected_rows(self, columns: str, source: str) -> str:
        """What follows ``FROM`` in a selection of ``columns``: the rows of ``source`` (a
        scan's source and terms), ready for more ``AND`` terms of :meth:`field_test`."""
        return source

    holds_text: str | None = None
    """A term true where the stored payload's text holds the parameter's text, which a
    selection tries before its tests of equality where that is cheaper than the test."""

    no_limit: object = None
    """The ``LIMIT`` parameter that limits nothing (where an ``OFFSET`` needs one)."""

    @abstractmethod
    def checked_replace(self, terms: str, *, guarded: bool) -> str:
        """A replace written by the statement that checks it: the row ``(resource, key)``
        at ``revision`` and holding ``terms`` (more `` AND`` checks, one parameter each)
        and, if ``guarded``, the anchor ``(resource, key)`` there, is written with its
        next event; it affects no row otherwise. Parameters, where :attr:`replace_row`
        is ``None``: the write (``revision, attributes, record_type, format_version,
        payload``), then ``resource, key, revision``, the terms' and the anchor's; its
        event then goes in by :attr:`append_event_at_row`. Elsewhere the statement
        writes the event too: the anchor's, ``resource, key, revision``, the terms', the
        event's (``originator, topic, state``), the write's, then ``resource, key``."""

    def checked_replace_keeping_attributes(self, terms: str, *, guarded: bool) -> str | None:
        """:meth:`checked_replace` for a write whose attributes are the stored ones: the
        row's attributes are not set, so a database that rewrites the index entries of
        every column a write sets leaves them alone. Parameters, where
        :attr:`replace_row` is ``None``: the write without its attributes (``revision,
        record_type, format_version, payload``), the attributes (the row must hold
        exactly this text), then as :meth:`checked_replace`'s. ``None`` where the
        database leaves unchanged index entries alone by itself."""
        return None

    @abstractmethod
    def bind(self, value: Scalar) -> object:
        """A parameter comparing equal to :meth:`attribute` exactly when the values are equal."""

    @abstractmethod
    def quote(self, text: str) -> str:
        """A string literal for DDL."""

    def template_literal(self, text: str) -> str:
        """A string literal that may stand in a statement template: :meth:`sql` finds in it
        nothing to rewrite (see :func:`as_template`) and the driver no parameter."""
        return as_template(self.quote(text))

    @abstractmethod
    def json(self, text: str) -> object:
        """A parameter for a JSON column, of the text :func:`dumps` wrote (a record write
        stores its attributes' text in the row and in its event: encoded once)."""

    @abstractmethod
    def originator(self, value: uuid.UUID) -> object:
        """A parameter for ``storage_events.originator_id``."""

    text_originators = False
    """Whether :meth:`originator` is ``str(value)``: then an id may be written as that text
    without making the ``UUID`` first."""

    @abstractmethod
    def violated_index(self, error: BaseException) -> str | None:
        """The index a unique violation names, or ``None`` for any other error."""

    def prepare(self) -> list[str]:
        """Idempotent DDL to run before any table is created."""
        return []

    @abstractmethod
    def create_tables(self) -> list[str]:
        """Idempotent DDL of the fixed tables (not the generated indexes)."""

    def upgrade_tables(self, found: int) -> list[str]:
        """DDL bringing the fixed tables of a store of storage schema version ``found``
        (older than this build's) to this build's layout; run before :meth:`create_tables`,
        in the same transaction. Nothing by default."""
        return []

    @abstractmethod
    def identifier(self, name: str) -> str:
        """A quoted identifier for DDL."""

    @abstractmethod
    def drop_index(self, name: str) -> str:
        """DDL dropping index ``name`` if it exists."""

    def pipeline(self, connection: Any) -> AbstractContextManager[Any]:
        """Send the statements run inside together (nothing to do by default: an embedded
        database has no round trips)."""
        return _NO_ROUND_TRIPS

    def index_hint(self, name: str) -> str:
        """What follows a table name to make a query read index ``name`` (nothing by default)."""
        return ""

    def literal(self, value: Scalar) -> str:
        """A DDL literal comparing equal to :meth:`attribute` like :meth:`bind` does."""
        bound = self.bind(value)
        return str(bound) if isinstance(bound, int) else self.quote(str(bound))
