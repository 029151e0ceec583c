"""The ``sqlite:`` store kind: everything an SQLite file store needs (imports ``sqlite3``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nenjim.infrastructure.store.kinds import StoreKind

KIND = StoreKind(
    name="sqlite",
    scheme="sqlite:",
    url_pattern="sqlite:",
    examples=("sqlite:///abs/path.db", "sqlite:relative.db"),
    parse_url="nenjim.infrastructure.sqlite.urls:sqlite_env",
    log_factory="nenjim.infrastructure.sqlite.log:ClaimingSQLiteFactory",
    prepare_log="nenjim.infrastructure.sqlite.files:prepare_log",
    backend="nenjim.infrastructure.sqlite.storage:SQLiteBackend",
    new_test_store="nenjim.infrastructure.sqlite:new_test_store",
    projections="nenjim.infrastructure.sqlite.projections:recorder_for",
    storage_session="nenjim.infrastructure.sqlite.inspection:storage_session",
    reader="nenjim.infrastructure.sqlite.files:reading",
    log_store="nenjim.infrastructure.sqlite.transfer:SQLiteLogStore",
    maintenance="nenjim.infrastructure.sqlite.maintenance:SQLiteStore",
    where="SQLite store {SQLITE_DBNAME}",
)


def new_test_store(
    directory: Callable[[], Path], server: Callable[[], str]
) -> tuple[str, Callable[[], None]]:
    """A file that does not exist yet, in a new scratch directory."""
    return f"sqlite://{directory() / 'store.db'}", lambda: None
