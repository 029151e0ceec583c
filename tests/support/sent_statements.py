"""What a PostgreSQL connection sends, seen from the client: the first word of each
statement and ``BEGIN`` for each transaction. The statements still reach the server."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest


def record_statements(
    monkeypatch: pytest.MonkeyPatch, executor: type[psycopg.Connection[Any] | psycopg.Cursor[Any]]
) -> list[str]:
    """From now on, the first word of every statement ``executor`` (``psycopg.Connection``
    or ``psycopg.Cursor``) executes, and ``BEGIN`` for every transaction a connection begins."""
    words: list[str] = []
    execute, transaction = executor.execute, psycopg.Connection.transaction

    def recorded(sender: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        words.append(str(query).split()[0])
        return execute(sender, query, *args, **kwargs)

    def begun(connection: Any, *args: Any, **kwargs: Any) -> Any:
        words.append("BEGIN")
        return transaction(connection, *args, **kwargs)

    monkeypatch.setattr(executor, "execute", recorded)
    monkeypatch.setattr(psycopg.Connection, "transaction", begun)
    return words
