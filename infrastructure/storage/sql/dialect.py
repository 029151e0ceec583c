"""What differs between SQLite and PostgreSQL, behind one small interface.

Statements are written once as templates: ``?`` placeholders and ``{table}``
names (``{events}``, ``{records}``, ``{heads}``, ``{ids}``, ``{blobs}``,
``{versions}``, ``{generated}``). A dialect fills in its (schema-qualified)
table names and its placeholder style, and supplies the few expressions
that differ: reading one attribute out of the JSON column, binding a value
to compare with it, JSON and UUID parameters, row locks, and finding the
index a unique violation names.

Attribute names only ever reach SQL text after :func:`check_attribute_name`
accepted them, and resource ids only as bound parameters or through
:meth:`Dialect.quote` (in generated DDL), so no catalog value can inject SQL.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from infrastructure.storage.errors import SerializationError, UnsupportedBackendError

TABLE_NAMES = {
    "events": "storage_events",
    "records": "storage_records",
    "heads": "storage_stream_heads",
    "ids": "storage_stream_ids",
    "blobs": "storage_blobs",
    "versions": "nenjim_schema",
    "generated": "storage_generated_indexes",
}
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SQLITE_UNIQUE_INDEX = re.compile(r"UNIQUE constraint failed: index '(?P<name>[^']+)'")

Scalar = str | int | bool


def check_attribute_name(resource_id: str, name: str) -> str:
    """``name`` if it may appear in SQL text (indexed or constrained attributes only)."""
    if not _ATTRIBUTE_NAME.fullmatch(name):
        raise UnsupportedBackendError(
            f"resource {resource_id!r}: the SQL backends index attributes named like "
            f"identifiers ([A-Za-z_][A-Za-z0-9_]*), not {name!r}"
        )
    return name


def dumps(value: Any) -> str:
    """Compact JSON text (non-ASCII kept as is; NaN and infinities refused)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Dialect(ABC):
    """SQL text and value conversions of one database."""

    for_update: str
    """Appended to a SELECT that must lock the rows it reads."""

    append_event: str
    """Insert one event; affects no row when its (originator, version) exists."""

    index_names: str
    """Select the name of every index on the storage tables (one column)."""

    def __init__(self, tables: Mapping[str, str]) -> None:
        self.tables = dict(tables)
        self._cache: dict[str, str] = {}

    def sql(self, template: str) -> str:
        """``template`` with this database's table names and placeholders."""
        text = self._cache.get(template)
        if text is None:
            text = self._cache[template] = self._placeholders(template.format_map(self.tables))
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
        """The SQL expression reading attribute ``name`` from ``attributes`` (NULL for null)."""

    @abstractmethod
    def bind(self, value: Scalar) -> object:
        """A parameter comparing equal to :meth:`attribute` exactly when the values are equal."""

    @abstractmethod
    def quote(self, text: str) -> str:
        """A string literal for DDL."""

    @abstractmethod
    def json(self, value: Mapping[str, Any]) -> object:
        """A parameter for a JSON column."""

    @abstractmethod
    def originator(self, value: uuid.UUID) -> object:
        """A parameter for ``storage_events.originator_id``."""

    @abstractmethod
    def violated_index(self, error: BaseException) -> str | None:
        """The index a unique violation names, or ``None`` for any other error."""

    def prepare(self) -> list[str]:
        """Idempotent DDL to run before any table is created."""
        return []

    @abstractmethod
    def create_tables(self) -> list[str]:
        """Idempotent DDL of the fixed tables (not the generated indexes)."""

    @abstractmethod
    def identifier(self, name: str) -> str:
        """A quoted identifier for DDL."""

    @abstractmethod
    def drop_index(self, name: str) -> str:
        """DDL dropping index ``name`` if it exists."""

    def literal(self, value: Scalar) -> str:
        """A DDL literal comparing equal to :meth:`attribute` like :meth:`bind` does."""
        bound = self.bind(value)
        return str(bound) if isinstance(bound, int) else self.quote(str(bound))


class SQLiteDialect(Dialect):
    """SQLite (JSON functions built in since 3.38): JSON text attributes read with
    ``json_extract``; keys compare BINARY, which is UTF-8 byte order."""

    for_update = ""  # BEGIN IMMEDIATE already made this connection the only writer
    index_names = "SELECT name FROM sqlite_master WHERE type = 'index'"
    append_event = (
        # One writer at a time, so max + 1 numbers notifications without gaps.
        "INSERT INTO {events} (originator_id, originator_version, topic, state, notification_id) "
        "SELECT ?, ?, ?, ?, coalesce(max(notification_id), 0) + 1 FROM {events} WHERE true "
        "ON CONFLICT (originator_id, originator_version) DO NOTHING"
    )

    def __init__(self) -> None:
        super().__init__(TABLE_NAMES)

    def attribute(self, name: str) -> str:
        return f"json_extract(attributes, '$.{name}')"

    def bind(self, value: Scalar) -> object:
        # json_extract yields 1/0 for true/false, so booleans compare as integers.
        return int(value) if isinstance(value, bool) else value

    def quote(self, text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    def json(self, value: Mapping[str, Any]) -> object:
        return dumps(dict(value))

    def originator(self, value: uuid.UUID) -> object:
        return str(value)

    def violated_index(self, error: BaseException) -> str | None:
        if not isinstance(error, sqlite3.IntegrityError):
            return None
        found = _SQLITE_UNIQUE_INDEX.search(str(error))
        return None if found is None else found.group("name")

    def identifier(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def drop_index(self, name: str) -> str:
        return f"DROP INDEX IF EXISTS {self.identifier(name)}"

    def create_tables(self) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS {events} ("
            "originator_id TEXT NOT NULL, originator_version INTEGER NOT NULL, "
            "topic TEXT NOT NULL, state BLOB NOT NULL, notification_id INTEGER NOT NULL, "
            "PRIMARY KEY (originator_id, originator_version))",
            "CREATE UNIQUE INDEX IF NOT EXISTS storage_events_notification_id "
            "ON {events} (notification_id)",
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
