"""``repair_store`` / ``repair_backend``: rebuild the inline tables from the log, all or nothing.

The repair runs in one transaction that excludes every other writer. It
audits the store inside that transaction; it refuses (changing nothing) if
the log itself has findings, since rebuilding from a log that lost or
garbled events would make the loss permanent. Otherwise every row a table
finding names is deleted and written again exactly as the log implies
(deletes first, so a unique index never sees a transient duplicate),
missing generated indexes are created, and the store is audited once more
in the same transaction: the repair commits only if that audit is clean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.audit.auditing import examine
from nenjim.infrastructure.storage.audit.replay import ReplayedLog
from nenjim.infrastructure.storage.audit.sessions import SqlStore
from nenjim.infrastructure.storage.audit.tables import (
    BLOBS_TABLE,
    HEADS_TABLE,
    IDS_TABLE,
    RECORDS_TABLE,
)
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.errors import StorageError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.audit_report import AuditReport

INDEXES = "indexes"
"""The ``rewritten`` entry counting created indexes."""


class RepairRefusedError(StorageError):
    """The log itself is inconsistent; ``report`` holds the audit. Nothing was changed."""

    def __init__(self, report: AuditReport) -> None:
        findings = report.log_findings
        super().__init__(
            f"{report.store}: repair refused, nothing changed: the log itself has "
            f"{len(findings)} finding(s), first: {findings[0].line()}"
        )
        self.report = report


class RepairFailedError(StorageError):
    """The rebuilt tables still disagreed with the log; the repair was rolled back."""

    def __init__(self, report: AuditReport) -> None:
        super().__init__(
            f"{report.store}: repair rolled back: {len(report.findings)} finding(s) remained, "
            f"first: {report.findings[0].line()}"
        )
        self.report = report


@immutable
@dataclass(frozen=True, slots=True)
class RepairReport:
    """The audit the repair started from, and what it rewrote per table."""

    before: AuditReport
    rewritten: Mapping[str, int]
    """Rows (records, heads, blobs), streams (ids) or indexes rewritten, by table."""

    @property
    def changed(self) -> bool:
        """True if anything was rewritten."""
        return any(self.rewritten.values())


def repair_store(url: str, resources: Sequence[Resource]) -> RepairReport:
    """Repair the SQL store at ``url`` against ``resources``; a missing store is not created."""
    store = SqlStore.from_url(url)
    with store.exclusive() as session:
        return repair_session(session, store.description, resources)


def repair_backend(backend: Backend) -> RepairReport:
    """Repair the store an open SQLite or PostgreSQL backend works on, against its resources."""
    store = SqlStore.of_backend(backend)
    with store.exclusive() as session:
        return repair_session(session, store.description, tuple(backend.resources.values()))


def repair_session(session: Session, store: str, resources: Sequence[Resource]) -> RepairReport:
    """Repair inside the caller's exclusive transaction; raise to have it rolled back."""
    before, replayed = examine(session, store, resources)
    if not before.repairable:
        raise RepairRefusedError(before)
    rewritten = _rewrite(session, before, replayed, resources) if not before.ok else {}
    if rewritten:
        after, _ = examine(session, store, resources)
        if not after.ok:
            raise RepairFailedError(after)
    return RepairReport(before, MappingProxyType(rewritten))


def _rewrite(
    session: Session, report: AuditReport, replayed: ReplayedLog, resources: Sequence[Resource]
) -> dict[str, int]:
    targets: dict[str, set[tuple[str, str]]] = {}
    for finding in report.findings:
        if finding.source == "table" and finding.resource is not None and finding.key is not None:
            targets.setdefault(finding.table, set()).add((finding.resource, finding.key))
    deletes = {
        RECORDS_TABLE: "DELETE FROM {records} WHERE resource = ? AND key = ?",
        HEADS_TABLE: "DELETE FROM {heads} WHERE resource = ? AND stream = ?",
        IDS_TABLE: "DELETE FROM {ids} WHERE resource = ? AND stream = ?",
        BLOBS_TABLE: "DELETE FROM {blobs} WHERE resource = ? AND key = ?",
    }
    for table, statement in deletes.items():
        for slot in sorted(targets.get(table, ())):
            session.execute(statement, slot)
    dialect = session.dialect
    for slot in sorted(targets.get(RECORDS_TABLE, ())):
        live = replayed.records.get(slot)
        if live is not None:
            entry, record = live.entry, live.entry.record
            session.execute(
                "INSERT INTO {records} (resource, key, revision, attributes, record_type, "
                "format_version, payload, log_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *slot,
                    entry.revision,
                    dialect.json(events.attributes_text(entry)),
                    record.record_type,
                    record.format_version,
                    record.payload_json,
                    live.log_version,
                ),
            )
    for slot in sorted(targets.get(HEADS_TABLE, ())):
        stream = replayed.streams.get(slot)
        if stream is not None:
            session.execute(
                "INSERT INTO {heads} (resource, stream, head, base) VALUES (?, ?, ?, ?)",
                (*slot, stream.head, stream.base),
            )
    for slot in sorted(targets.get(IDS_TABLE, ())):
        stream = replayed.streams.get(slot)
        for entry_id in () if stream is None else stream.ids:
            session.execute(
                "INSERT INTO {ids} (resource, stream, entry_id) VALUES (?, ?, ?)", (*slot, entry_id)
            )
    for slot in sorted(targets.get(BLOBS_TABLE, ())):
        blob = replayed.blobs.get(slot)
        if blob is not None:
            session.execute(
                "INSERT INTO {blobs} (resource, key, data, attributes) VALUES (?, ?, ?, ?)",
                # The bytes stay in the blob's put event: the row holds none.
                (*slot, b"", dialect.json(dumps(dict(blob.attributes)))),
            )
    rewritten = {table: len(slots) for table, slots in targets.items()}
    missing = [finding for finding in report.findings if finding.source == "schema"]
    if missing:
        for index in Layout(dialect, resources).indexes:
            session.execute_ddl(index.ddl)  # IF NOT EXISTS: only the missing ones are built
            session.execute(
                "INSERT INTO {generated} (index_name, resource) VALUES (?, ?) "
                "ON CONFLICT (index_name) DO NOTHING",
                (index.name, index.resource),
            )
        rewritten[INDEXES] = len(missing)
    return rewritten
