"""Audits and repairs of what a store holds: the Journal log, and durable state.

The Journal's (:func:`audit_journal_log`, :func:`repair_journal_store`)
re-check every logged revision (the first problem found is the report's one
finding: :func:`journal_problem`), and rebuild what the store derives from its
log when only that is damaged. Durable state's (:func:`audit_storage`,
:func:`repair_storage`) check the inline rows of an SQLite or PostgreSQL
store against its storage log, and rebuild the rows that disagree. None of
them creates a store.
"""

from __future__ import annotations

from nenjim.infrastructure.langgraph.catalog import CATALOG as LANGGRAPH_CATALOG
from nenjim.infrastructure.langgraph.presence import catalog_in_store
from nenjim.infrastructure.langgraph.store.catalog import STORE_CATALOG
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import Resource
from nenjim.infrastructure.storage.audit import RepairReport as StorageRepairReport
from nenjim.infrastructure.storage.audit import audit_store, repair_store
from nenjim.infrastructure.store.audit_report import AuditReport
from nenjim.journal.impl.ref.audit import audit_journal_log, journal_problem
from nenjim.journal.impl.ref.repair import repair_journal_store

__all__ = [
    "AuditReport",
    "StorageRepairReport",
    "audit_journal_log",
    "audit_storage",
    "journal_problem",
    "repair_journal_store",
    "repair_storage",
    "storage_catalog",
]


def audit_storage(url: str) -> AuditReport:
    """Audit durable state in the store ``url`` against the catalogs it was opened with."""
    return audit_store(url, storage_catalog(url))


def repair_storage(url: str) -> StorageRepairReport:
    """Rebuild the inline rows of the store ``url`` that disagree with its log, all or
    nothing; ``RepairRefusedError`` while the log itself has findings."""
    return repair_store(url, storage_catalog(url))


def storage_catalog(url: str) -> tuple[Resource, ...]:
    """The resources of every catalog the store was opened with.

    A catalog with an index is found by the indexes its opening left, any catalog by its
    rows. A store where no catalog left either was opened, if at all, by catalogs that
    declare no index and hold no row yet (the LangGraph Store's): it is checked against
    those.
    """
    catalogs = (CATALOG, LANGGRAPH_CATALOG, STORE_CATALOG)
    found = [c for c in catalogs if catalog_in_store(url, c)]
    if not found:
        found = [c for c in catalogs if not any(r.indexes or r.unique for r in c)]
    return tuple(resource for catalog in found for resource in catalog)
