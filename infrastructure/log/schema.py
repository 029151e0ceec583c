"""The log's schema version, recorded in the database and checked on every open."""

from __future__ import annotations

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


# Which owner a log belongs to: one row per log (keyed by its events table),
# written once by the first owner to open the log and never changed.
IDENTITY_TABLE = "nenjim_identity"
