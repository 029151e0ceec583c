"""What an SQL store still holds of a value: every cell of every table, read with our own SQL.

An erasure test writes a unique marker string into the payload it deletes and
then asks :func:`holds` whether the store still has it anywhere: in the log
(``storage_events``, whose states PostgreSQL keeps as ``bytea``) and in every
other table of the store. A payload may keep the marker in base64 (blob bytes
in the log, LangGraph's inline values) or zlib-compressed (LangGraph's larger
values), so each cell is searched as stored, base64-decoded and inflated.
"""

from __future__ import annotations

import base64
import binascii
import re
import sqlite3
import zlib
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg

_BASE64 = re.compile(rb"[A-Za-z0-9+/]{12,}={0,2}")


def _sqlite_cells(path: str) -> dict[str, list[bytes]]:
    cells: dict[str, list[bytes]] = {}
    with sqlite3.connect(path) as conn:
        tables = [
            str(row[0])
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        for table in tables:
            cells[table] = [
                _bytes(value)
                for row in conn.execute(f'SELECT * FROM "{table}"')
                for value in row
                if value is not None
            ]
    return cells


def _postgres_cells(url: str) -> dict[str, list[bytes]]:
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    cells: dict[str, list[bytes]] = {}
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position",
            (schema,),
        ):
            columns.setdefault(str(table), []).append((str(column), str(kind)))
        for table, named in columns.items():
            # bytea as its bytes (encode(..., 'escape') keeps printable bytes as they are),
            # everything else as text.
            selected = ", ".join(
                f"encode(\"{column}\", 'escape')" if kind == "bytea" else f'"{column}"::text'
                for column, kind in named
            )
            rows = conn.execute(f'SELECT {selected} FROM "{schema}"."{table}"').fetchall()
            cells[table] = [_bytes(value) for row in rows for value in row if value is not None]
    return cells


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8", "surrogatepass")


def store_cells(url: str) -> dict[str, list[bytes]]:
    """Every non-null cell of every table of the SQL store at ``url``, by table."""
    if url.startswith("sqlite:"):
        return _sqlite_cells(url.removeprefix("sqlite://").removeprefix("sqlite:"))
    if url.startswith("postgresql:"):
        return _postgres_cells(url)
    raise ValueError(f"not an SQL store: {url}")


def _found(data: bytes, marker: bytes, depth: int = 0) -> bool:
    if marker in data:
        return True
    if depth >= 3:
        return False
    try:
        if _found(zlib.decompress(data), marker, depth + 1):
            return True
    except zlib.error:
        pass
    for match in _BASE64.finditer(data):
        text = match.group(0)
        for cut in range(4):
            chunk = text[cut:]
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            try:
                decoded = base64.b64decode(chunk, validate=True)
            except (binascii.Error, ValueError):
                continue
            if _found(decoded, marker, depth + 1):
                return True
    return False


def tables_holding(url: str, marker: str) -> list[str]:
    """The tables of the SQL store at ``url`` in which ``marker`` is still found."""
    wanted = marker.encode("utf-8")
    return sorted(
        table
        for table, cells in store_cells(url).items()
        if any(_found(cell, wanted) for cell in cells)
    )


def log_states(url: str) -> list[bytes]:
    """The states of the log, as the store's own SQL reads them."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite://").removeprefix("sqlite:")
        with sqlite3.connect(path) as conn:
            return [_bytes(row[0]) for row in conn.execute("SELECT state FROM storage_events")]
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        rows = conn.execute(f'SELECT state FROM "{schema}".storage_events').fetchall()
    return [_bytes(row[0]) for row in rows]


def log_holds(url: str, marker: str) -> bool:
    """Whether any state of ``storage_events`` holds ``marker`` (as is, base64 or zlib)."""
    wanted = marker.encode("utf-8")
    return any(_found(state, wanted) for state in log_states(url))
