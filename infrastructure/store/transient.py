"""``is_transient(error)``: is this database error worth running the transaction again?

The SPI never relabels a database error: a deadlock, a dropped connection or
a busy SQLite file reaches the caller as the driver's own exception, never
as a conflict, and nothing is retried behind the caller's back. This
predicate tells the caller which of those errors a retry of the whole
transaction can cure. It looks only at the error itself and knows the
drivers of both SQL backends without importing them (an error of a driver
that was never imported cannot exist).

Transient:

- PostgreSQL (``psycopg``): serialization failure (``40001``), deadlock
  (``40P01``), lock not available (``55P03``), administrator or crash
  shutdown and "cannot connect now" (``57P01``-``57P03``), too many
  connections (``53300``), a session killed as idle in transaction
  (``25P03``), every connection exception (class ``08``), and a connection
  that was lost or could not be made (an ``OperationalError`` without a
  SQLSTATE);
- ``psycopg_pool``: no connection within the pool's timeout
  (``PoolTimeout``), too many waiting requests (``TooManyRequests``);
- SQLite: ``SQLITE_BUSY`` and ``SQLITE_LOCKED`` ("database is locked").

Everything else is not: storage errors (a conflict needs fresh state, not a
blind retry; ``BackendClosedError`` is final), constraint violations, a
closed pool, a cancelled statement (``57014``, which may be deliberate),
``40003`` (statement completion unknown) and any non-database exception.

A connection lost during ``COMMIT`` leaves the outcome unknown: the
transaction may have committed. Retrying is still safe for writes guarded by
revisions, expected heads or write-once keys (a repeat of a committed write
is a ``ConflictError``); make other side effects idempotent.
"""

from __future__ import annotations

import sys

# sqlite3.SQLITE_BUSY and SQLITE_LOCKED: SQLite's primary result codes 5 and 6.
_SQLITE_BUSY_OR_LOCKED = frozenset({5, 6})
_POSTGRES_TRANSIENT = frozenset(
    {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300", "25P03"}
)
_POSTGRES_CONNECTION_CLASS = "08"


def is_transient(error: BaseException) -> bool:
    """Whether running the failed transaction again may succeed (see the module doc)."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(error, sqlite3.OperationalError):
        # Extended codes (SQLITE_BUSY_SNAPSHOT, ...) keep the primary code in the low byte.
        code = getattr(error, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _SQLITE_BUSY_OR_LOCKED
    return _is_transient_postgres(error)


def _is_transient_postgres(error: BaseException) -> bool:
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(error, psycopg.Error):
        return False
    pool = sys.modules.get("psycopg_pool")
    if pool is not None:
        if isinstance(error, pool.PoolClosed):
            return False
        if isinstance(error, pool.PoolTimeout | pool.TooManyRequests):
            return True
    sqlstate = error.sqlstate
    if sqlstate is None:
        # No server answer at all: the connection was lost or never made.
        return isinstance(error, psycopg.OperationalError)
    return sqlstate in _POSTGRES_TRANSIENT or sqlstate.startswith(_POSTGRES_CONNECTION_CLASS)
