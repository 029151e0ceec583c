"""``audit_store`` / ``audit_backend``: the log replayed and every inline table compared with it."""

from __future__ import annotations

from collections.abc import Sequence

from nenjim.infrastructure.storage.audit.compare import compare_tables
from nenjim.infrastructure.storage.audit.replay import ReplayedLog, replay_log
from nenjim.infrastructure.storage.audit.sessions import SqlStore
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.audit_report import AuditReport


def audit_store(url: str, resources: Sequence[Resource]) -> AuditReport:
    """Audit the SQL store at ``url`` against ``resources``, on a read-only snapshot.

    Nothing is created or changed: a URL naming no storage raises
    ``StoreNotFoundError``; ``memory:`` raises ``UnsupportedBackendError``.
    """
    store = SqlStore.from_url(url)
    with store.snapshot() as session:
        return examine(session, store.description, resources)[0]


def audit_backend(backend: Backend) -> AuditReport:
    """Audit the store an open SQLite or PostgreSQL backend works on, against its resources."""
    store = SqlStore.of_backend(backend)
    with store.snapshot() as session:
        return examine(session, store.description, tuple(backend.resources.values()))[0]


def examine(
    session: Session, store: str, resources: Sequence[Resource]
) -> tuple[AuditReport, ReplayedLog]:
    """The audit report of the store ``session`` reads, and the replayed log behind it."""
    catalog = {resource.id: resource for resource in resources}
    replayed = replay_log(session, catalog)
    findings = [*replayed.findings, *compare_tables(session, catalog, replayed)]
    live = {
        "records": len(replayed.records),
        "streams": sum(1 for stream in replayed.streams.values() if stream.head),
        "blobs": len(replayed.blobs),
    }
    return AuditReport(store, replayed.events, live, tuple(findings)), replayed
