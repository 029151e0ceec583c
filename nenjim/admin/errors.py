"""Every error the command line and the server tell apart, in one list.

Each is raised below the facade and reported by the command line with its
own message, kind and exit code (``nenjim.cli.classify`` and the commands),
or answered by the server with its own status. :class:`MissingExtraError`
and :func:`is_driver_error` are the facade's own.
"""

from __future__ import annotations

import sys

from eventsourcing.persistence import MapperDeserialisationError, PersistenceError
from eventsourcing.utils import TopicError

from nenjim.admin.draft import DraftError
from nenjim.admin.transfer import ImportAuditError, ImportRefusedError
from nenjim.domain.transparency import InvalidTilePathError, TransparencyError
from nenjim.infrastructure.log.transfer import ExportFormatError, UnreadableEventError
from nenjim.infrastructure.storage import StorageError, UnsupportedBackendError
from nenjim.infrastructure.storage.audit import (
    RepairFailedError,
    RepairRefusedError,
    StoreNotFoundError,
)
from nenjim.infrastructure.store.errors import (
    LogDamagedError,
    ProjectionDamagedError,
    RebuildLostError,
    RebuildTimeoutError,
    StoreIdentityError,
    StoreUnavailableError,
    is_read_only_error,
)
from nenjim.infrastructure.store.urls import UnsupportedStoreError
from nenjim.infrastructure.store.versions import IncompatibleStoreError
from nenjim.journal.impl.ref.transparency_proofs import ProofCheckError, ProofRequestError
from nenjim.projections.journal_chains import ProjectionIntegrityError

__all__ = [
    "DraftError",
    "ExportFormatError",
    "ImportAuditError",
    "ImportRefusedError",
    "IncompatibleStoreError",
    "InvalidTilePathError",
    "LogDamagedError",
    "MapperDeserialisationError",
    "MissingExtraError",
    "PersistenceError",
    "ProjectionDamagedError",
    "ProjectionIntegrityError",
    "ProofCheckError",
    "ProofRequestError",
    "RebuildLostError",
    "RebuildTimeoutError",
    "RepairFailedError",
    "RepairRefusedError",
    "StorageError",
    "StoreIdentityError",
    "StoreNotFoundError",
    "StoreUnavailableError",
    "TopicError",
    "TransparencyError",
    "UnreadableEventError",
    "UnsupportedBackendError",
    "UnsupportedStoreError",
    "is_driver_error",
    "is_read_only_error",
]


class MissingExtraError(RuntimeError):
    """What was asked needs an extra that is not installed (``pip install 'nenjim[...]'``)."""


def is_driver_error(error: BaseException) -> bool:
    """Whether ``error`` is a database driver's own (a driver never imported raised nothing)."""
    sqlite3, psycopg = sys.modules.get("sqlite3"), sys.modules.get("psycopg")
    return (sqlite3 is not None and isinstance(error, sqlite3.Error)) or (
        psycopg is not None and isinstance(error, psycopg.Error)
    )
