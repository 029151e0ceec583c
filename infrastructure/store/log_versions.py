"""The log's schema version, recorded in the database and checked on every open."""

from __future__ import annotations

from nenjim.infrastructure.store.errors import LogDamagedError, StoreUnavailableError

SCHEMA_VERSION = 1
SCHEMA_TABLE = "nenjim_schema"


class IncompatibleStoreError(RuntimeError):
    """The database holds a log written by an incompatible schema version."""

    def __init__(self, where: str, found: int) -> None:
        super().__init__(
            f"{where} holds a nenjim log of schema version {found}; this build reads "
            f"version {SCHEMA_VERSION} only. Use a matching nenjim release or a new database."
        )
        self.found = found


def check_schema_version(where: str, found: int | None) -> None:
    """Refuse a database whose recorded version is not ours (``None``: just created)."""
    if found is not None and found != SCHEMA_VERSION:
        raise IncompatibleStoreError(where, found)


def require_log_tables(where: str, events: str, present: set[str]) -> None:
    """Refuse to read a log whose tables (``present``: which of its events, claims and
    schema tables the store holds) are not all there.

    None of them, or neither the events nor the claims table: the store holds no
    such log (``StoreUnavailableError``); some of them: the store is damaged
    (``LogDamagedError``, naming the missing table).
    """
    claims = events.removesuffix("_events") + "_claims"
    if events not in present and claims not in present:
        raise StoreUnavailableError(f"{where} holds no log {events!r}")
    for table in (events, claims, SCHEMA_TABLE):
        if table not in present:
            raise LogDamagedError(
                f"{where}: table {table} of the log {events!r} is missing: the store is damaged"
            )


def recorded_version(where: str, events: str, found: object) -> int:
    """The schema version read for ``events`` (``found``: the row's value, ``None`` for no
    row); ``LogDamagedError`` when the row is missing or holds no integer."""
    if type(found) is not int:
        raise LogDamagedError(
            f"{where}: {SCHEMA_TABLE} holds {'no' if found is None else repr(found)} schema "
            f"version for the log {events!r}: the store is damaged"
        )
    return found


# Which owner a log belongs to: one row per log (keyed by its events table),
# written once by the first owner to open the log and never changed.
IDENTITY_TABLE = "nenjim_identity"
