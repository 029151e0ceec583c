"""The PostgreSQL half of :mod:`.inspection` (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresSettings
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError


@contextmanager
def postgres_session(url: str) -> Iterator[Session | None]:
    """A read-only transaction on the schema the URL names, or ``None`` without a storage log."""
    settings = PostgresSettings.from_url(url)
    dialect = PostgresDialect(settings.schema)
    try:
        timeout = max(1, round(settings.connect_timeout))
        connection = psycopg.connect(settings.conninfo, autocommit=True, connect_timeout=timeout)
    except psycopg.OperationalError as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise StoreUnavailableError(f"cannot reach {settings.where}: {reason}") from None
    with connection, connection.transaction():
        connection.execute("SET TRANSACTION READ ONLY")
        row = connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (dialect.tables["events"],)
        ).fetchone()
        yield Session(connection, dialect) if row is not None and row[0] else None
