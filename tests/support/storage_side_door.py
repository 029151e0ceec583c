"""A store under test, with a side door for plain SQL: the edits an operator could make."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg

from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.session import Session

INLINE_TABLES = ("{records}", "{heads}", "{ids}", "{blobs}")


class Store:
    """A store URL, the backend the test writes through, and a side door for plain SQL."""

    def __init__(self, url: str, backend: Backend) -> None:
        self.url = url
        self.backend = backend

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite:")

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """Run ``sql`` (``?`` placeholders, unqualified table names) outside the engine."""
        if self.is_sqlite:
            with sqlite3.connect(self.url.removeprefix("sqlite://")) as conn:
                return conn.execute(sql, params).rowcount
        parts = urlsplit(self.url)
        schema = parse_qs(parts.query)["schema"][0]
        with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            return conn.execute(sql.replace("?", "%s"), params).rowcount

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Rows of ``sql`` read through the backend's own session."""
        with self.backend.transaction():
            scope = self.backend.current_scope()
            assert scope is not None
            session: Session = scope.context
            return session.all(sql, params)

    def originator(self, value: uuid.UUID) -> object:
        return str(value) if self.is_sqlite else value

    def event(self, log_stream: uuid.UUID, version: int) -> tuple[str, dict[str, Any]]:
        """The topic and decoded state of one event."""
        rows = self.rows(
            "SELECT topic, state FROM {events} WHERE originator_id = ? AND originator_version = ?",
            (self.originator(log_stream), version),
        )
        return str(rows[0][0]), events.decode_event(str(rows[0][0]), rows[0][1])

    def set_event_state(self, log_stream: uuid.UUID, version: int, state: bytes) -> None:
        changed = self.execute(
            "UPDATE storage_events SET state = ? "
            "WHERE originator_id = ? AND originator_version = ?",
            (state, self.originator(log_stream), version),
        )
        assert changed == 1

    def delete_event(self, log_stream: uuid.UUID, version: int) -> None:
        changed = self.execute(
            "DELETE FROM storage_events WHERE originator_id = ? AND originator_version = ?",
            (self.originator(log_stream), version),
        )
        assert changed == 1

    def snapshot(self) -> list[Any]:
        """Every inline row, to show a refused repair changed nothing."""
        return [
            sorted(map(tuple, self.rows("SELECT * FROM " + table)), key=repr)
            for table in INLINE_TABLES
        ]
