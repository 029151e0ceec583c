"""What following needs of the database, created on open (version 2 of the storage schema).

PostgreSQL: each event records its writing transaction (``transaction_id
xid8``, default ``pg_current_xact_id()``); rows written before the column
existed get 0, which sorts them first, in id order, as they were all
committed long before. An index serves reads in ``(transaction_id,
notification_id)`` order. A statement trigger sends ``pg_notify`` on
channel :data:`CHANNEL` (payload: the schema) inside the writing
transaction, so a listener is woken when, and only when, it commits.

SQLite needs nothing: its ids are dense and in commit order.
"""

from __future__ import annotations

from infrastructure.storage.sql.dialect import TABLE_NAMES, Dialect
from infrastructure.storage.sql.session import Session

CHANNEL = "nenjim_storage"
"""The ``LISTEN`` channel woken by every commit that appends storage events."""


def qualified(dialect: Dialect, name: str) -> str:
    """``name`` in the schema of the dialect's storage tables (as the events table is)."""
    events = dialect.tables["events"]
    return events[: len(events) - len(TABLE_NAMES["events"])] + name


def upgrade(session: Session) -> None:
    """Bring a new or version 1 store's log up to version 2 (idempotent)."""
    dialect = session.dialect
    if dialect.dense_notification_ids:
        return
    notify = qualified(dialect, "storage_events_notify")
    for statement in (
        "ALTER TABLE {events} ADD COLUMN IF NOT EXISTS transaction_id xid8 NOT NULL DEFAULT '0'",
        "ALTER TABLE {events} ALTER COLUMN transaction_id SET DEFAULT pg_current_xact_id()",
        "CREATE INDEX IF NOT EXISTS storage_events_transaction "
        "ON {events} (transaction_id, notification_id)",
        f"CREATE OR REPLACE FUNCTION {notify}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA); RETURN NULL; END $$",
        "CREATE OR REPLACE TRIGGER storage_events_notify AFTER INSERT ON {events} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {notify}()",
    ):
        session.execute(statement)
