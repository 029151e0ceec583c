"""The append-only log: ``eventsourcing`` recorders plus inline tables written
in the same transaction as the events, opened by URL; its followers read it
through :class:`LogReader`."""

from nenjim.infrastructure.log.application import LogApplication, LogBatch
from nenjim.infrastructure.log.claims import Claim, ClaimConflictError
from nenjim.infrastructure.log.reader import LogReader
from nenjim.infrastructure.log.tiles import (
    Decode,
    EntryTiler,
    StoredTile,
    TiledLog,
    TileGrowth,
    TileKey,
    TileReads,
    TilesMissingError,
)
from nenjim.infrastructure.store.errors import (
    LogClosedError,
    LogDamagedError,
    ProjectionDamagedError,
    RebuildLostError,
    RebuildTimeoutError,
    StoreIdentityError,
    StoreReadOnlyError,
    StoreUnavailableError,
    TiledLogDamagedError,
    is_read_only_error,
)
from nenjim.infrastructure.store.urls import StoreLocation, UnsupportedStoreError, resolve_store_url
from nenjim.infrastructure.store.versions import IncompatibleStoreError

__all__ = [
    "Claim",
    "ClaimConflictError",
    "Decode",
    "EntryTiler",
    "IncompatibleStoreError",
    "LogApplication",
    "LogBatch",
    "LogClosedError",
    "LogDamagedError",
    "LogReader",
    "ProjectionDamagedError",
    "RebuildLostError",
    "RebuildTimeoutError",
    "StoreIdentityError",
    "StoreLocation",
    "StoreReadOnlyError",
    "StoreUnavailableError",
    "StoredTile",
    "TileGrowth",
    "TileKey",
    "TileReads",
    "TiledLog",
    "TiledLogDamagedError",
    "TilesMissingError",
    "UnsupportedStoreError",
    "is_read_only_error",
    "resolve_store_url",
]
