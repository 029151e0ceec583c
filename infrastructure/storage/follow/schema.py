"""What following needs of the database, created on open (version 2 of the storage schema).

PostgreSQL: each event records its writing transaction (``transaction_id
xid8``, default ``pg_current_xact_id()``); rows written before the column
existed get 0, which sorts them first, in id order, as they were all
committed long before. An index serves reads in ``(transaction_id,
notification_id)`` order. A statement trigger sends ``pg_notify`` on
channel :data:`CHANNEL` (payload: the schema) inside the writing
transaction, so a listener is woken when, and only when, it commits.

It does so only while a follower of the schema listens. A transaction that
notifies takes, at its commit, a lock that every other notifying commit of
the server waits for until it is durable: commits that notify cannot share
a flush, which cost concurrent writers ~30% of their commits in a run by
hand (8 threads, one-row transactions: 5,000 → 3,550 per second) and the
Storage SPI's writers 30% (insert at 8 threads: 3,560 → 2,510 per second).
A follower holds :func:`listening_lock`, shared, on its listening
connection while it listens; the trigger notifies when it cannot take that
lock itself (taken and given back at once, so writers never wait on each
other for it). A follower that began to listen after a writer's trigger
ran misses that commit's wake-up and finds its events at its next poll.

SQLite needs nothing: its ids are dense and in commit order.
"""

from __future__ import annotations

from nenjim.infrastructure.storage.sql.dialect import TABLE_NAMES, Dialect
from nenjim.infrastructure.storage.sql.session import Session

CHANNEL = "nenjim_storage"
"""The ``LISTEN`` channel woken by every commit that appends storage events."""

LISTENING = 0x6E6A5354
"""The first key of the advisory lock a follower of a schema holds while it listens."""


def listening_lock(schema: str) -> tuple[str, tuple[object, ...]]:
    """The advisory lock key of the followers of ``schema``: an SQL expression and its
    parameters (psycopg placeholders)."""
    return "%s, hashtext(%s)", (LISTENING, schema)


def qualified(dialect: Dialect, name: str) -> str:
    """``name`` in the schema of the dialect's storage tables (as the events table is)."""
    events = dialect.tables["events"]
    return events[: len(events) - len(TABLE_NAMES["events"])] + name


def has_table(session: Session, name: str) -> bool:
    """Whether table ``name`` exists beside the storage log."""
    if session.dialect.dense_notification_ids:
        found = session.one(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        )
        return found is not None
    found = session.one("SELECT to_regclass(?) IS NOT NULL", (qualified(session.dialect, name),))
    return found is not None and bool(found[0])


def upgrade(session: Session) -> None:
    """Bring a new or older store's log up to what followers need (idempotent): from
    version 1 the column, its index and the trigger; from version 2 or 3 the trigger's
    function, which notifies only while a follower listens."""
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
        f"BEGIN IF pg_try_advisory_lock({LISTENING}, hashtext(TG_TABLE_SCHEMA)) THEN "
        f"PERFORM pg_advisory_unlock({LISTENING}, hashtext(TG_TABLE_SCHEMA)); "
        f"ELSE PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA); END IF; RETURN NULL; END $$",
        "CREATE OR REPLACE TRIGGER storage_events_notify AFTER INSERT ON {events} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {notify}()",
    ):
        session.execute(statement)
