"""Why a store could not be used: one root, :class:`StoreError`, for every store failure.

A log's errors, the Storage SPI's (``nenjim.infrastructure.storage.errors``) and
a store that cannot be opened derive from it; when a database driver's own
exception caused one, it is kept as its ``__cause__``.
"""

from __future__ import annotations

import sys


class StoreError(Exception):
    """Base of every store failure."""


class StoreUnavailableError(StoreError):
    """The store cannot be opened or used as asked.

    It does not exist (and was to be read, not created), cannot be reached
    (the message carries the driver's reason: refused, unknown database,
    authentication), cannot be written (read-only file system, missing
    directory, permissions), or its driver is not installed.
    """


class StoreReadOnlyError(StoreUnavailableError):
    """The store can be read but not written, and what was asked must write it.

    An SQLite file on read-only media (a read-only file, directory or file
    system) is opened to read: what only reads works, and what must write
    raises this, naming the store.
    """


def is_read_only_error(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from, is a store refusing to write
    because it is read-only: :class:`StoreReadOnlyError`, SQLite's ``SQLITE_READONLY``
    (a file on read-only media), PostgreSQL's read-only transaction (a standby server,
    ``default_transaction_read_only``)."""
    # The drivers are looked up, not imported: a store of another kind loads neither.
    sqlite3 = sys.modules.get("sqlite3")
    psycopg_errors = sys.modules.get("psycopg.errors")
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, StoreReadOnlyError):
            return True
        if sqlite3 is not None and isinstance(seen, sqlite3.Error):
            code = getattr(seen, "sqlite_errorcode", 0)
            if code & 0xFF == sqlite3.SQLITE_READONLY:  # the primary code of every variant
                return True
        if psycopg_errors is not None and isinstance(seen, psycopg_errors.ReadOnlySqlTransaction):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class StoreIdentityError(StoreError):
    """The log in the store belongs to another owner than the one opening it."""

    def __init__(self, where: str, recorded: str, wanted: str) -> None:
        super().__init__(f"{where} belongs to {recorded!r}, not {wanted!r}")
        self.where = where
        self.recorded = recorded
        self.wanted = wanted


class LogClosedError(StoreUnavailableError):
    """A read or write of a log after its ``close()``: the log takes no more work."""


class RebuildLostError(StoreError):
    """A projection rebuild lost to another rebuild of the same projection.

    The other one started later and swapped its generation in first (or dropped
    the one this rebuild was filling); the served generation is that one, whole.
    """


class RebuildTimeoutError(StoreError, TimeoutError):
    """A projection rebuild waited too long for transactions older than it to end.

    On PostgreSQL an event is final (a follower may apply it) only once every
    transaction that started before it, anywhere on the server, has ended; a
    rebuild covers every event committed before it began, so it waits for them.
    The live generation is unchanged.
    """


class ProjectionDamagedError(StoreError):
    """A persisted projection that was edited behind the engine's back: its tracking row
    holds a value of the wrong type, its table is missing, or its table holds rows past
    its tracked position. Rebuilding the projection replaces it."""


class LogDamagedError(StoreError):
    """The log's own tables were edited behind the engine's back so that they cannot be
    read as a log: a table of the log is missing beside the others, its schema version row
    is gone, or a stored event's columns hold what no event can (a NULL, another type)."""


class TiledLogDamagedError(LogDamagedError):
    """A tiled log's entries or tiles were edited behind the engine's back: an entry or a
    tile that the others call for is missing, or holds what none can (another type, too
    few bytes). They derive from the events (``TiledLog.rebuild_entries`` rebuilds them);
    a write that finds them so is rolled back whole: its events are not appended."""
