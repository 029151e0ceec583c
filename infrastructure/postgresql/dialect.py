"""The PostgreSQL dialect of the SQL storage driver (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

import re
import uuid
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from nenjim.infrastructure.storage.canonical_json import dumps
from nenjim.infrastructure.storage.selection import FieldOrder, FieldTest
from nenjim.infrastructure.storage.sql.dialect import (
    ORDER_COMPARISONS,
    TABLE_NAMES,
    Dialect,
    Scalar,
)

_PLAIN_LITERAL = re.compile(r"[A-Za-z0-9_.:/ -]*")
"""Text that a plain literal carries through the placeholder rewrite and psycopg unchanged."""


def _unicode_escape(character: str) -> str:
    """``character`` inside a ``U&'...'`` literal: plain ones as they are, others escaped."""
    if _PLAIN_LITERAL.fullmatch(character):
        return character
    code = ord(character)
    return f"\\{code:04X}" if code <= 0xFFFF else f"\\+{code:06X}"


def _checked_replace(terms: str, *, guarded: bool) -> str:
    """A data-modifying CTE: one statement, so one execution on the client. It reads the
    row it writes, so it can be sent with the row's lock, before its answer; the
    anchor's lock (``guarded``) is taken when the row's checks read it, before the
    row's own."""
    anchor = "g AS (SELECT 1 FROM {records} WHERE resource = ? AND key = ? FOR UPDATE), "
    return (
        "WITH "
        + (anchor if guarded else "")
        + "r AS (SELECT log_version + 1 AS version FROM {records} "
        "WHERE resource = ? AND key = ? AND revision = ?"
        + terms
        + (" AND EXISTS (SELECT 1 FROM g)" if guarded else "")
        + " FOR UPDATE), "
        "e AS (INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, r.version, ?, ? FROM r "
        "ON CONFLICT (originator_id, originator_version) DO NOTHING "
        "RETURNING originator_version) UPDATE {records} SET revision = ?, attributes = ?, "
        "record_type = ?, format_version = ?, payload = ?, "
        "log_version = (SELECT originator_version FROM e) WHERE resource = ? AND key = ? "
        "AND EXISTS (SELECT 1 FROM e)"
    )


def _append_rows(*, guarded: bool, alone: bool, single: bool = False) -> str:
    """An append as one statement whatever the batch size (arrays, in order): the head
    row is created, or locked, by the upsert that moves it, and only if it moved do the
    entry ids and the events go in. A head row at another head is locked and left as it
    is (``ON CONFLICT ... DO UPDATE ... WHERE`` locks the rows it does not update), and
    the statement returns no head. The anchor's lock (``guarded``) is taken before the
    head row's, the order every writer takes, and a missing anchor writes nothing.

    Sent ``alone`` (a transaction of its own) it writes all or nothing: a new head row
    is proposed only by an append that expects 0 (a stream missing from the statement's
    snapshot is not created at 0), and an id already in the live stream, or a version
    taken, fails the whole statement on its key. Inside a transaction, those go by (the
    ids that went in are returned) and the error that reports them rolls it back.

    ``single``: the form for one entry, whose id, position and state are scalars, not
    arrays of one: psycopg adapts a list parameter at about the cost of a statement's
    other parameters together, and the server parses it."""
    anchor = "g AS (SELECT 1 FROM {records} WHERE resource = ? AND key = ? FOR UPDATE), "
    proposed = []
    if alone:
        proposed.append(
            "(p.expected = 0 OR EXISTS (SELECT 1 FROM {heads} "
            "WHERE resource = p.resource AND stream = p.stream))"
        )
    if guarded:
        proposed.append("EXISTS (SELECT 1 FROM g)")
    skip = "" if alone else " ON CONFLICT (resource, stream, entry_id) DO NOTHING"
    skip_event = "" if alone else " ON CONFLICT (originator_id, originator_version) DO NOTHING"
    return (
        "WITH "
        + (anchor if guarded else "")
        + "hd AS (INSERT INTO {heads} AS h (resource, stream, head, base) "
        "SELECT p.resource, p.stream, CASE WHEN p.expected = 0 THEN p.moved ELSE 0 END, 0 "
        "FROM (VALUES (?, ?, ?::bigint, ?::bigint)) AS p(resource, stream, expected, moved)"
        + (" WHERE " + " AND ".join(proposed) if proposed else "")
        + " ON CONFLICT (resource, stream) DO UPDATE SET head = ? WHERE h.head = ? "
        "RETURNING head, base), "
        "i AS (INSERT INTO {ids} (resource, stream, entry_id) "
        "SELECT ?, ?, " + ("?::text" if single else "unnest(?::text[])") + " FROM hd "
        "WHERE hd.head = ?" + skip + " RETURNING entry_id), "
        "e AS (INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, hd.base + u.pos, ?, u.state FROM hd, "
        + (
            "(VALUES (?::bigint, ?::bytea)) AS u(pos, state) WHERE hd.head = ?"
            if single
            else "unnest(?::bigint[], ?::bytea[]) WITH ORDINALITY AS u(pos, state, n) "
            "WHERE hd.head = ? ORDER BY u.n"
        )
        + skip_event
        + " RETURNING 1) "
        "SELECT (SELECT head FROM hd), ARRAY(SELECT entry_id FROM i), (SELECT count(*) FROM e)"
        + (", (SELECT count(*) FROM g)" if guarded else "")
    )


def _as_written(text: str) -> str:
    """psycopg's ``dumps`` for a ``Jsonb`` of text already written as JSON: that text."""
    return text


class PostgresDialect(Dialect):
    """PostgreSQL: ``jsonb`` attributes read with ``->>``; keys ``COLLATE "C"`` (byte order)."""

    for_update = " FOR UPDATE"
    dense_notification_ids = False  # a bigserial value is spent by a rolled-back insert
    notification_id_sequence = (
        "SELECT s IS NOT NULL, pg_sequence_last_value(s), "
        "(SELECT max(notification_id) FROM {events}) "
        "FROM (SELECT pg_get_serial_sequence(?, 'notification_id')::regclass AS s) AS q"
    )
    append_event = (
        "INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (originator_id, originator_version) DO NOTHING"
    )

    # The row, numbered with its log stream's next version, and its event at that version:
    # a version taken since fails the statement (the key of the log), so the row never
    # goes in without its event, inside a transaction or as one of its own.
    insert_row = (
        "WITH r AS (INSERT INTO {records} (resource, key, revision, attributes, record_type, "
        "format_version, payload, log_version) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, coalesce(max(originator_version), 0) + 1 "
        "FROM {events} WHERE originator_id = ? "
        "ON CONFLICT (resource, key) DO NOTHING RETURNING log_version), "
        "e AS (INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, r.log_version, ?, ? FROM r RETURNING 1) "
        "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM e)"
    )

    # A key purged before has events already: the put follows them.
    insert_blob = (
        "WITH b AS (INSERT INTO {blobs} (resource, key, data, attributes) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (resource, key) DO NOTHING RETURNING 1), "
        "e AS (INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, coalesce((SELECT max(originator_version) FROM {events} "
        "WHERE originator_id = ?), 0) + 1, ?, ? FROM b RETURNING 1) "
        "SELECT (SELECT count(*) FROM b), (SELECT count(*) FROM e)"
    )

    # HAVING, not WHERE: the aggregate yields its one row whatever WHERE leaves.
    insert_guarded_row = (
        "WITH g AS (SELECT 1 FROM {records} WHERE resource = ? AND key = ? FOR UPDATE), "
        "r AS (INSERT INTO {records} (resource, key, revision, attributes, record_type, "
        "format_version, payload, log_version) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, coalesce(max(originator_version), 0) + 1 "
        "FROM {events} WHERE originator_id = ? HAVING EXISTS (SELECT 1 FROM g) "
        "ON CONFLICT (resource, key) DO NOTHING RETURNING log_version), "
        "e AS (INSERT INTO {events} (originator_id, originator_version, topic, state) "
        "SELECT ?, r.log_version, ?, ? FROM r RETURNING 1) "
        "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM e), (SELECT count(*) FROM g)"
    )

    append_event_at_anchored_row = None  # insert_guarded_row locks the anchor itself
    replace_row = _checked_replace("", guarded=False)

    append_rows = _append_rows(guarded=False, alone=False)
    append_guarded_rows = _append_rows(guarded=True, alone=False)
    append_rows_alone = _append_rows(guarded=False, alone=True)
    append_guarded_rows_alone = _append_rows(guarded=True, alone=True)
    reads_in_one_statement = True
    # A union takes each column's type from its branches in turn: an untyped NULL in the
    # first two would be text, which a later branch's bigint or bytea does not match.
    record_nulls = (
        "NULL::text",
        "NULL::bigint",
        "NULL::jsonb",
        "NULL::text",
        "NULL::text",
        "NULL::text",
    )
    entry_nulls = ("NULL::bigint", "NULL::bytea")
    append_single = MappingProxyType(
        {
            _append_rows(guarded=guarded, alone=alone): _append_rows(
                guarded=guarded, alone=alone, single=True
            )
            for guarded in (False, True)
            for alone in (False, True)
        }
    )

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._schema_sql = sql.Identifier(schema).as_string(None)
        self.index_names = "SELECT indexname FROM pg_indexes WHERE schemaname = " + sql.Literal(
            schema
        ).as_string(None)
        super().__init__({key: f"{self._schema_sql}.{name}" for key, name in TABLE_NAMES.items()})

    def pipeline(self, connection: Any) -> AbstractContextManager[Any]:
        # psycopg's pipeline mode: one network flush and one sync for the block.
        pipeline: AbstractContextManager[Any] = connection.pipeline()
        return pipeline

    def _placeholders(self, text: str) -> str:
        # Templates hold no '%' and no '?' operator, so this rewrite is exact.
        return text.replace("?", "%s")

    # The name as a template literal: no '?' or '%' left to become a parameter, and an
    # identifier exactly as earlier builds wrote it in the generated indexes.
    def attribute(self, name: str) -> str:
        return f"(attributes->>{self.template_literal(name)})"

    def attribute_equals_json(self, name: str) -> str:
        return f"(attributes -> {self.template_literal(name)}) = CAST(? AS jsonb)"

    # A payload is parsed once a row, as the column ``doc`` of the selection's rows
    # (``OFFSET 0`` keeps the planner from folding the subquery and so the parse into every
    # use). jsonb equality is JSON equality (numbers as numerics, no type equal to
    # another); an ordered test is kept to the operand's type, strings compared in the C
    # collation, by their UTF-8 bytes, that is by code point.
    def selected_rows(self, columns: str, source: str) -> str:
        return (
            f"(SELECT {columns}, CAST(payload AS jsonb) AS doc FROM {source} OFFSET 0) "
            "AS selected WHERE TRUE"
        )

    # A byte search before a test of equality: a payload without the member's text is
    # never parsed (a filtered Store search by hand: 770 -> 523 us).
    holds_text = "strpos(payload, ?) > 0"

    def field_test(self, test: FieldTest) -> tuple[str, list[object]]:
        value, path = _field(test.path), list[object](test.path)
        operator, operand = test.operator, test.operand
        if operator == "present":
            return f"({value}) IS NOT NULL", path
        if operator in ("eq", "ne"):
            comparison = "=" if operator == "eq" else "<>"
            return f"({value}) {comparison} CAST(? AS jsonb)", [*path, dumps(operand)]
        comparison = ORDER_COMPARISONS[operator]
        if isinstance(operand, str):
            return (
                f"(jsonb_typeof({value}) = 'string' AND "
                f'({_field(test.path, text=True)}) COLLATE "C" {comparison} ?)',
                [*path, *path, operand],
            )
        return (
            f"(jsonb_typeof({value}) = 'number' AND ({value}) {comparison} CAST(? AS jsonb))",
            [*path, *path, dumps(operand)],
        )

    def field_order(self, order: FieldOrder) -> tuple[str, list[object]]:
        direction = "DESC" if order.descending else "ASC"
        path = list[object](order.path)
        return (
            f"CASE WHEN jsonb_typeof({_field(order.path)}) = 'string' "
            f'THEN ({_field(order.path, text=True)}) END COLLATE "C" {direction} NULLS LAST',
            [*path, *path],
        )

    def checked_replace(self, terms: str, *, guarded: bool) -> str:
        return _checked_replace(terms, guarded=guarded)

    def bind(self, value: Scalar) -> object:
        # ->> yields text: JSON true/false read as 'true'/'false', integers in decimal.
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def quote(self, text: str) -> str:
        return sql.Literal(text).as_string(None)

    def template_literal(self, text: str) -> str:
        if _PLAIN_LITERAL.fullmatch(text):
            return self.quote(text)
        # '?' would become a parameter in the rewrite, '%' one for psycopg: written as
        # Unicode escapes (U&'...'), every character but plain ones, the text stays exact.
        return "U&'" + "".join(_unicode_escape(character) for character in text) + "'"

    def json(self, text: str) -> object:
        return Jsonb(text, _as_written)

    def originator(self, value: uuid.UUID) -> object:
        return value

    def violated_index(self, error: BaseException) -> str | None:
        if not isinstance(error, psycopg.errors.UniqueViolation):
            return None
        return error.diag.constraint_name

    def identifier(self, name: str) -> str:
        return sql.Identifier(name).as_string(None)

    def drop_index(self, name: str) -> str:
        return f"DROP INDEX IF EXISTS {self._schema_sql}.{self.identifier(name)}"

    def prepare(self) -> list[str]:
        return [f"CREATE SCHEMA IF NOT EXISTS {self._schema_sql}"]

    def create_tables(self) -> list[str]:
        key = 'text COLLATE "C" NOT NULL'
        return [
            "CREATE TABLE IF NOT EXISTS {events} ("
            "originator_id uuid NOT NULL, originator_version bigint NOT NULL, "
            "topic text NOT NULL, state bytea NOT NULL, notification_id bigserial NOT NULL, "
            "PRIMARY KEY (originator_id, originator_version))",
            "CREATE UNIQUE INDEX IF NOT EXISTS storage_events_notification_id "
            "ON {events} (notification_id)",
            "CREATE TABLE IF NOT EXISTS {records} ("
            f"resource {key}, key {key}, revision bigint NOT NULL, "
            "attributes jsonb NOT NULL, record_type text NOT NULL, "
            "format_version text NOT NULL, payload text NOT NULL, "
            "log_version bigint NOT NULL, PRIMARY KEY (resource, key))",
            "CREATE TABLE IF NOT EXISTS {heads} ("
            f"resource {key}, stream {key}, head bigint NOT NULL, base bigint NOT NULL, "
            "PRIMARY KEY (resource, stream))",
            "CREATE TABLE IF NOT EXISTS {ids} ("
            f"resource {key}, stream {key}, entry_id {key}, "
            "PRIMARY KEY (resource, stream, entry_id))",
            "CREATE TABLE IF NOT EXISTS {blobs} ("
            f"resource {key}, key {key}, data bytea NOT NULL, attributes jsonb NOT NULL, "
            "PRIMARY KEY (resource, key))",
            "CREATE TABLE IF NOT EXISTS {generated} ("
            "index_name text PRIMARY KEY, resource text NOT NULL)",
        ]


def _field(path: tuple[str, ...], *, text: bool = False) -> str:
    """The payload field at ``path``, one parameter a name: ``->`` with a text operand
    steps into an object only (on an array it finds nothing, as ``#>`` would not), and
    ``->>`` as the last step gives a string's text."""
    steps = [" -> CAST(? AS text)"] * len(path)
    if text:
        steps[-1] = " ->> CAST(? AS text)"
    return "doc" + "".join(steps)
