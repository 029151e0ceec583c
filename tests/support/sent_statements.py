"""What a PostgreSQL connection sends, seen from the client (the first word of each
statement and ``BEGIN`` for each transaction; the statements still reach the server), and
the server ending a store's pooled sessions under it."""

from __future__ import annotations

import time
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


def end_pool_sessions(postgres_url: str, schema: str, timeout: float = 20.0) -> None:
    """End, from the server's side, every pooled session of the store in ``schema`` (as a
    restart or an administrator would), and wait until the server has let them go."""
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        ended = _pool_sessions(admin, schema)
        assert ended
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (list(ended),)
        )
        deadline = time.monotonic() + timeout
        while _pool_sessions(admin, schema) & ended:
            assert time.monotonic() < deadline, "terminated sessions did not go away"
            time.sleep(0.01)


def _pool_sessions(admin: psycopg.Connection[Any], schema: str) -> set[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
        (f"nenjim-storage:{schema}",),
    ).fetchall()
    return {int(row[0]) for row in rows}
