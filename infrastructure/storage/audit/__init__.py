"""Audit and repair of the SQL backends' inline tables against their log, ``storage_events``.

The log is the record of every write; ``storage_records``,
``storage_stream_heads``, ``storage_stream_ids`` and ``storage_blobs`` (and
the unique indexes generated from the catalog) are projections of it kept
in the same transactions. :func:`audit_store` replays the log, checks it
against its own rules and compares every inline row, head, id and blob with
what it implies, reporting each disagreement as one :class:`Finding`.
:func:`repair_store` rebuilds the disagreeing rows from the log in one
transaction, and refuses while the log itself has findings.
:func:`compact_store` gives back the space of deleted and overwritten rows and
leaves none of their bytes in the store's files.

This package takes any resource list; it knows nothing of a domain catalog.
"""

from nenjim.infrastructure.storage.audit.auditing import audit_backend, audit_store
from nenjim.infrastructure.storage.audit.compaction import (
    CompactedPart,
    CompactionReport,
    compact_store,
)
from nenjim.infrastructure.storage.audit.repair import (
    RepairFailedError,
    RepairRefusedError,
    RepairReport,
    repair_backend,
    repair_store,
)
from nenjim.infrastructure.storage.audit.sessions import StoreNotFoundError
from nenjim.infrastructure.store.audit_report import AuditReport, Finding

__all__ = [
    "AuditReport",
    "CompactedPart",
    "CompactionReport",
    "Finding",
    "RepairFailedError",
    "RepairRefusedError",
    "RepairReport",
    "StoreNotFoundError",
    "audit_backend",
    "audit_store",
    "compact_store",
    "repair_backend",
    "repair_store",
]
