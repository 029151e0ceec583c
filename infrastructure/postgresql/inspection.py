"""Looking at a PostgreSQL store's storage log without creating or upgrading anything."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nenjim.infrastructure.postgresql.connect import reading
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresSettings
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.urls import StoreLocation


@contextmanager
def storage_session(location: StoreLocation) -> Iterator[Session | None]:
    """A read-only transaction on the schema the URL names, or ``None`` without a storage log."""
    settings = PostgresSettings.from_url(location.url)
    dialect = PostgresDialect(settings.schema)
    with reading(settings.location) as connection:
        row = connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (dialect.tables["events"],)
        ).fetchone()
        yield Session(connection, dialect) if row is not None and row[0] else None
