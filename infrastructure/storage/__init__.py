"""Storage SPI 2: neutral records, streams and blobs with guards, conditions and scopes.

Drivers: ``infrastructure.storage.memory.InMemoryBackend``,
``infrastructure.storage.sqlite.SQLiteBackend``,
``infrastructure.storage.postgres.PostgresBackend``; ``open_backend(url,
resources)`` picks one by URL. The conformance kit is
``infrastructure.storage.testing``.
"""

from infrastructure.storage.backend import REQUIRED_CAPABILITIES, Backend, validate_capabilities
from infrastructure.storage.conditions import UNCHECKED, GuardRef, NoRows, RevisionIs, StreamHeadIs
from infrastructure.storage.durable_record import DurableRecord
from infrastructure.storage.entries import (
    AppendEntry,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from infrastructure.storage.errors import (
    BackendClosedError,
    BlobConflictError,
    ConditionFailedError,
    ConflictError,
    NotFoundError,
    SerializationError,
    StorageError,
    TransactionError,
    UniqueConstraintError,
    UnsupportedBackendError,
)
from infrastructure.storage.opening import open_backend
from infrastructure.storage.resource import Resource
from infrastructure.storage.transient import is_transient
from infrastructure.storage.view import Blobs, Records, Streams, View

__all__ = [
    "REQUIRED_CAPABILITIES",
    "UNCHECKED",
    "AppendEntry",
    "Backend",
    "BackendClosedError",
    "BlobConflictError",
    "BlobEntry",
    "Blobs",
    "ConditionFailedError",
    "ConflictError",
    "DurableRecord",
    "GuardRef",
    "NoRows",
    "NotFoundError",
    "RecordEntry",
    "RecordedEntry",
    "Records",
    "Resource",
    "RevisionIs",
    "SerializationError",
    "StorageError",
    "StreamEntry",
    "StreamHeadIs",
    "Streams",
    "TransactionError",
    "UniqueConstraintError",
    "UnsupportedBackendError",
    "View",
    "is_transient",
    "open_backend",
    "validate_capabilities",
]
