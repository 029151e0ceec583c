"""Storage SPI 2: neutral records, streams and blobs with guards, conditions and scopes.

Drivers: ``nenjim.infrastructure.memory.storage.InMemoryBackend``,
``nenjim.infrastructure.sqlite.storage.SQLiteBackend``,
``nenjim.infrastructure.postgresql.storage.PostgresBackend``; ``open_backend(url,
resources)`` picks one by URL. The conformance kit is
``nenjim.infrastructure.storage.testing``.
"""

from nenjim.infrastructure.storage.backend import (
    REQUIRED_CAPABILITIES,
    Backend,
    validate_capabilities,
)
from nenjim.infrastructure.storage.conditions import (
    UNCHECKED,
    GuardRef,
    NoRows,
    RevisionIs,
    StreamHeadIs,
)
from nenjim.infrastructure.storage.durable_record import DurableRecord
from nenjim.infrastructure.storage.entries import (
    AppendEntry,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from nenjim.infrastructure.storage.errors import (
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
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.purge import Purge
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.retention import Retention, RetentionReport, apply_retention
from nenjim.infrastructure.storage.selection import FieldOrder, FieldTest
from nenjim.infrastructure.storage.view import Blobs, Records, Streams, View
from nenjim.infrastructure.store.transient import is_transient

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
    "FieldOrder",
    "FieldTest",
    "GuardRef",
    "NoRows",
    "NotFoundError",
    "Purge",
    "RecordEntry",
    "RecordedEntry",
    "Records",
    "Resource",
    "Retention",
    "RetentionReport",
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
    "apply_retention",
    "is_transient",
    "open_backend",
    "validate_capabilities",
]
