"""The SQLite dialect of the SQL storage driver (imports ``sqlite3``: SQLite stores only)."""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Mapping
from types import MappingProxyType

from nenjim.infrastructure.storage.selection import FieldOrder, FieldTest
from nenjim.infrastructure.storage.sql.dialect import (
    ORDER_COMPARISONS,
    TABLE_NAMES,
    Dialect,
    Scalar,
    as_template,
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_SQLITE_UNIQUE_INDEX = re.compile(r"UNIQUE constraint failed: index '(?P<name>[^']+)'")


KEYED_BY_NOTIFICATION_ID = 3
"""The storage schema version from which SQLite's log is keyed by its notification id."""

# The log keyed by its notification id (the row id, so one b-tree holds the rows in log
# order and a reader by position needs no index), with ``(originator_id,
# originator_version)`` as the unique key that refuses a second writer of a log version.
# Earlier versions kept a row id, that key and a unique index on the notification id: one
# b-tree more written by every event.
_EVENTS_TABLE = (
    "CREATE TABLE IF NOT EXISTS {name} ("
    "notification_id INTEGER PRIMARY KEY, "
    "originator_id TEXT NOT NULL, originator_version INTEGER NOT NULL, "
    "topic TEXT NOT NULL, state BLOB NOT NULL, "
    "UNIQUE (originator_id, originator_version))"
)


_ANCHOR_EXISTS = "EXISTS (SELECT 1 FROM {records} g WHERE g.resource = ? AND g.key = ?)"
"""Whether a write's anchor row is there (parameters: its resource and key): where the
transaction holds the only write lock, finding it is locking it."""


class SQLiteDialect(Dialect):
    """SQLite (JSON functions built in since 3.38): JSON text attributes read with
    ``json_extract``; keys compare BINARY, which is UTF-8 byte order."""

    for_update = ""  # BEGIN IMMEDIATE already made this connection the only writer
    dense_notification_ids = True
    notification_id_sequence = None
    index_names = "SELECT name FROM sqlite_master WHERE type = 'index'"
    # The notification id is the row id, which SQLite gives a row inserted without one as
    # the largest in the table plus one: with one writer at a time, ids without gaps.
    # Written out as ``max(notification_id) + 1``, the statement would read the table it
    # writes, and SQLite would first copy its rows to a temporary table.
    append_event = (
        "INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (originator_id, originator_version) DO NOTHING"
    )

    insert_row = None  # SQLite has no INSERT inside WITH
    insert_guarded_row = None
    insert_blob = None
    # The anchor is looked for by the event's statement, not the row's: an INSERT into
    # the records that reads them would first copy what it reads to a temporary table.
    append_event_at_anchored_row = (
        "INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, r.log_version, ?, ? FROM {records} r WHERE r.resource = ? AND r.key = ? "
        "AND " + _ANCHOR_EXISTS + " "
        "ON CONFLICT (originator_id, originator_version) DO NOTHING"
    )
    replace_row = None
    append_rows = None
    append_guarded_rows = None
    append_rows_alone = None
    append_guarded_rows_alone = None
    append_single: Mapping[str, str] = MappingProxyType({})
    # No round trip to save: two reads one after the other take less than their union.
    reads_in_one_statement = False
    record_nulls = ("NULL",) * 6
    entry_nulls = ("NULL",) * 2

    append_event_at_row = (
        "INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, r.log_version, ?, ? FROM {records} r WHERE r.resource = ? AND r.key = ? "
        "ON CONFLICT (originator_id, originator_version) DO NOTHING"
    )

    def __init__(self) -> None:
        super().__init__(TABLE_NAMES)

    def _append_events(self, count: int, anchored: bool) -> str:
        # One parameter a row, its state: each row's ordinal is in the text and gives its
        # version (after the one before the first). The rows go in in the order of the
        # VALUES, so they take the next ``count`` notification ids (row ids) in order.
        # The WHERE also tells SQLite's parser that ON CONFLICT starts the upsert.
        where = _ANCHOR_EXISTS if anchored else "true"
        columns = "INSERT INTO {events} (originator_id, originator_version, topic, state) "
        upsert = " ON CONFLICT (originator_id, originator_version) DO NOTHING"
        if count == 1:  # no rows to join: a plain row is less work for SQLite
            if not anchored:
                return columns + "VALUES (?, ? + 1, ?, ?)" + upsert
            return columns + "SELECT ?, ? + 1, ?, ? WHERE " + where + upsert
        rows = ", ".join(f"(?, {ordinal})" for ordinal in range(1, count + 1))
        return (
            columns
            + f"SELECT ?, ? + v.column2, ?, v.column1 FROM (VALUES {rows}) AS v WHERE "
            + where
            + upsert
        )

    def attribute(self, name: str) -> str:
        return f"json_extract(attributes, {self._path(name)})"

    def attribute_equals_json(self, name: str) -> str:
        # '->' renders a value as its stored text, which the same encoder wrote: equal
        # text is an equal value of one type (text written another way is not equal).
        return as_template(f"(attributes -> {self._path(name)}) = ?")

    def _path(self, name: str) -> str:
        """The JSON path of attribute ``name``, as a literal: a quoted label (the name
        holds no '"' or '\\'), an identifier as it is, the text the generated indexes of
        earlier builds were made with, so that a query still matches them."""
        return self.quote("$." + (name if _IDENTIFIER.fullmatch(name) else f'"{name}"'))

    # A payload field is read by JSON path: json_type names its JSON type (NULL where
    # nothing is there), json_extract its SQL value (strings as TEXT, compared by their
    # UTF-8 bytes, that is by code point; true/false as 1/0, so the type is checked).
    def field_test(self, test: FieldTest) -> tuple[str, list[object]]:
        path = _field_path(test.path)
        operator, operand = test.operator, test.operand
        params: list[object]
        if operator == "present":
            return "json_type(payload, ?) IS NOT NULL", [path]
        if operator in ("eq", "ne"):
            if operand is None:
                term, params = "json_type(payload, ?) = 'null'", [path]
            elif isinstance(operand, bool):
                term = "json_type(payload, ?) = " + ("'true'" if operand else "'false'")
                params = [path]
            elif isinstance(operand, str) and not operand.startswith(("[", "{")):
                # json_extract gives a string's text, a number or a boolean as a number
                # and an array or object as its JSON text, which starts with [ or {: only
                # a string equal to the operand equals it. A row that passes costs one JSON
                # function call, not two (2% of a Store search's instructions).
                term, params = "coalesce(json_extract(payload, ?) = ?, 0)", [path, operand]
            else:
                term, params = _typed(operand, "="), [path, operand, path]
            if operator == "eq":
                return term, params
            return f"(json_type(payload, ?) IS NOT NULL AND NOT {term})", [path, *params]
        return _typed(operand, ORDER_COMPARISONS[operator]), [path, operand, path]

    def field_order(self, order: FieldOrder) -> tuple[str, list[object]]:
        path = _field_path(order.path)
        direction = "DESC" if order.descending else "ASC"
        return (
            "CASE WHEN json_type(payload, ?) = 'text' THEN json_extract(payload, ?) END "
            + direction
            + " NULLS LAST",
            [path, path],
        )

    # No byte search (holds_text) before a field test: SQLite's JSON functions read a
    # payload about as fast as instr() does (with it, a filtered Store search was slower).
    no_limit = -1

    def checked_replace(self, terms: str, *, guarded: bool) -> str:
        anchor = " AND " + _ANCHOR_EXISTS
        return (
            "UPDATE {records} SET revision = ?, attributes = ?, record_type = ?, "
            "format_version = ?, payload = ?, log_version = log_version + 1 "
            "WHERE resource = ? AND key = ? AND revision = ?" + terms + (anchor if guarded else "")
        )

    def checked_replace_keeping_attributes(self, terms: str, *, guarded: bool) -> str | None:
        # SQLite rewrites the entries of every index on a column an UPDATE sets, equal
        # values or not: an attributes column left out of SET leaves the scan and unique
        # indexes unwritten (three pages fewer per replace of an indexed resource).
        anchor = " AND " + _ANCHOR_EXISTS
        return (
            "UPDATE {records} SET revision = ?, record_type = ?, format_version = ?, "
            "payload = ?, log_version = log_version + 1 "
            "WHERE attributes = ? AND resource = ? AND key = ? AND revision = ?"
            + terms
            + (anchor if guarded else "")
        )

    def bind(self, value: Scalar) -> object:
        # json_extract yields 1/0 for true/false, so booleans compare as integers.
        return int(value) if isinstance(value, bool) else value

    def quote(self, text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    def json(self, text: str) -> object:
        return text

    text_originators = True

    def originator(self, value: uuid.UUID) -> object:
        return str(value)

    def violated_index(self, error: BaseException) -> str | None:
        if not isinstance(error, sqlite3.IntegrityError):
            return None
        found = _SQLITE_UNIQUE_INDEX.search(str(error))
        return None if found is None else found.group("name")

    def index_hint(self, name: str) -> str:
        return f" INDEXED BY {self.identifier(name)}"

    def identifier(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def drop_index(self, name: str) -> str:
        return f"DROP INDEX IF EXISTS {self.identifier(name)}"

    def create_tables(self) -> list[str]:
        return [
            _EVENTS_TABLE.format(name="{events}"),
            "CREATE TABLE IF NOT EXISTS {records} ("
            "resource TEXT NOT NULL, key TEXT NOT NULL, revision INTEGER NOT NULL, "
            "attributes TEXT NOT NULL, record_type TEXT NOT NULL, "
            "format_version TEXT NOT NULL, payload TEXT NOT NULL, "
            "log_version INTEGER NOT NULL, PRIMARY KEY (resource, key)) WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS {heads} ("
            "resource TEXT NOT NULL, stream TEXT NOT NULL, head INTEGER NOT NULL, "
            "base INTEGER NOT NULL, PRIMARY KEY (resource, stream)) WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS {ids} ("
            "resource TEXT NOT NULL, stream TEXT NOT NULL, entry_id TEXT NOT NULL, "
            "PRIMARY KEY (resource, stream, entry_id)) WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS {blobs} ("
            "resource TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL, "
            "attributes TEXT NOT NULL, PRIMARY KEY (resource, key)) WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS {generated} ("
            "index_name TEXT PRIMARY KEY, resource TEXT NOT NULL) WITHOUT ROWID",
        ]

    def upgrade_tables(self, found: int) -> list[str]:
        if found >= KEYED_BY_NOTIFICATION_ID:
            return []
        # SQLite cannot change a table's key in place: copy the log into a table of the
        # new layout, in id order, and put it in the old one's place (one transaction).
        rekeyed = "storage_events_rekeyed"
        return [
            _EVENTS_TABLE.format(name=rekeyed),
            f"INSERT INTO {rekeyed} (notification_id, originator_id, originator_version, topic, "
            "state) SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {events} ORDER BY notification_id",
            "DROP TABLE {events}",  # and its indexes
            f"ALTER TABLE {rekeyed} RENAME TO {{events}}",
        ]


def _field_path(path: tuple[str, ...]) -> str:
    """The JSON path of a payload field: each name quoted (names hold no '"' or '\\')."""
    return "$" + "".join(f'."{name}"' for name in path)


def _typed(operand: object, comparison: str) -> str:
    """The field, of the operand's JSON type (a number or a string), compared with it."""
    types = "= 'text'" if isinstance(operand, str) else "IN ('integer', 'real')"
    # The comparison first: it fails most rows, and then the type is never asked.
    return f"(json_extract(payload, ?) {comparison} ? AND json_type(payload, ?) {types})"
