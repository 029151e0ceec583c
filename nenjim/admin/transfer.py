"""Moving a store: export its logs to a file, import such a file into an empty store.

A store holds up to two logs: the Journal's (``journal_events``) and the
storage log of domain Persistence (``storage_events``). An export writes
both, event by event, with their stored bytes, ids and stream positions, and
the Journal's owner (its identity); nothing derived travels. An import
into an empty SQLite or PostgreSQL store:

1. reads the whole file and checks it (format, version, order, counts,
   checksum) before it touches the store;
2. audits the Journal log in memory, as ``nenjim journal audit`` does;
3. in ONE transaction on the target: refuses a store that is not empty,
   creates the tables, copies every event with its id, writes the Journal's
   digest claims (derived from its events) and identity, and rebuilds the
   storage inline tables from the storage log with the repair's rewrite,
   auditing them before it commits;
4. after the commit, audits both logs in the store (``nenjim journal
   audit``, ``nenjim storage audit``) and rebuilds every projection.

Anything refused in steps 1-3 writes nothing: the transaction rolls back,
and an SQLite file the import created is removed again.

Ids are kept, with one exception: SQLite numbers its storage log without
gaps (its audit reads a gap as a removed event), while PostgreSQL's storage
log may have gaps. Imported into SQLite, a storage log with gaps is
renumbered 1, 2, 3, ... in the same order; the report says so.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from typing import IO

from nenjim.admin import Progress, silent
from nenjim.admin.projections import rebuild_all
from nenjim.domain.journal.errors import JournalStoreError
from nenjim.infrastructure.log.claims import Claim
from nenjim.infrastructure.log.transfer import (
    EventTable,
    ExportReader,
    ExportSummary,
    ExportWriter,
    LogFilling,
    LoggedEvent,
    LogSection,
    LogStore,
    StoreNotEmptyError,
    open_log_store,
)
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage.audit import RepairFailedError, RepairRefusedError, audit_store
from nenjim.infrastructure.storage.audit.rebuild import (
    create_storage_tables,
    rebuild_inline_tables,
    storage_session,
)
from nenjim.infrastructure.storage.sql.log_table import STORAGE_EVENTS
from nenjim.infrastructure.store.audit_report import AuditReport
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.versions import check_log_version
from nenjim.journal.impl.ref.audit import audit_journal_log, journal_problem
from nenjim.journal.impl.ref.log import (
    JournalLog,
    describe_identity,
    journal_store_url,
    name_identity,
)
from nenjim.journal.impl.ref.transfer import JOURNAL_EVENTS, check_journal_log, journal_events_table

__all__ = [
    "JOURNAL",
    "LOGS",
    "STORAGE",
    "ExportSummary",
    "ImportAuditError",
    "ImportRefusedError",
    "ImportReport",
    "export_store",
    "import_store",
    "open_log_store",
    "rebuild_projections",
    "store_tables",
]

JOURNAL = JOURNAL_EVENTS.log
STORAGE = STORAGE_EVENTS.log
LOGS = (JOURNAL, STORAGE)
"""The logs a store may hold, in export order."""
_PAGE = 1000
_EVERY = 1000  # lines between two progress reports while a file is checked

_LOGGER = logging.getLogger(__name__)


class ImportRefusedError(RuntimeError):
    """The file, or a log in it, cannot be imported; nothing was written.

    ``audit`` is true when the refusal is a log that does not audit.
    """

    def __init__(self, message: str, *, audit: bool = False) -> None:
        super().__init__(message)
        self.audit = audit


class ImportAuditError(RuntimeError):
    """The store the import committed does not audit clean (a bug worth reporting)."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import wrote, and the audits and rebuilds that followed."""

    summary: ExportSummary
    """The file, as its trailer (checked) says."""
    renumbered: bool
    """Whether the storage log's ids were renumbered (a log with gaps, into SQLite)."""
    journal_audit: AuditReport | None
    storage_audit: AuditReport | None
    rebuilt: tuple[str, ...] = field(default=())
    """One line per projection rebuilt."""


def store_tables(store: LogStore, identity: str | None) -> tuple[EventTable, EventTable]:
    """Where the Journal log (of ``identity``) and the storage log live in ``store``."""
    return (
        journal_events_table(store.schema, identity),
        STORAGE_EVENTS.in_schema(store.schema or "public"),
    )


def export_store(
    url: str,
    out: IO[bytes],
    *,
    journal: str | None = None,
    source: str | None = None,
    progress: Progress | None = None,
) -> ExportSummary:
    """Write every log of the store at ``url`` to ``out``, from one consistent snapshot.

    ``journal`` names the Journal whose log to export (on PostgreSQL its
    schema is ``journal_<NAME>`` unless the URL names one) and checks that
    the store holds it. ``source`` is what the header names as the source
    (default: the URL, without its password). A store holding no log raises
    ``StoreUnavailableError``; nothing is ever created.
    """
    progress = progress or silent
    store = open_log_store(url)
    wanted = None if journal is None else name_identity(journal)
    with store.snapshot() as snapshot:
        tables = [table for table in store_tables(store, wanted) if snapshot.holds(table)]
        if not tables:
            raise StoreUnavailableError(
                f"{store.where} holds no nenjim log (neither {JOURNAL}_events nor "
                f"{STORAGE_EVENTS.table}); a named Journal's log on PostgreSQL is in schema "
                "journal_NAME (--journal NAME)"
            )
        for table in tables:
            check_log_version(store.where, snapshot.schema_version(table))
        if wanted is not None:
            recorded = snapshot.identity(tables[0]) if tables[0].log == JOURNAL else None
            if recorded != wanted:
                held = "no Journal" if recorded is None else describe_identity(recorded)
                raise JournalStoreError(
                    f"{store.where} holds {held}, not {describe_identity(wanted)}"
                )
        total = sum(snapshot.count(table) for table in tables)
        _LOGGER.info(
            "exporting %d events of the %s log from %s",
            total,
            " and ".join(table.log for table in tables),
            store.where,
        )
        writer = ExportWriter(out, source if source is not None else store.location.display)
        done = 0
        progress("exporting events", done, total)
        for table in tables:
            writer.begin_log(LogSection(table.log, snapshot.identity(table)))
            for event in snapshot.events(table):
                writer.event(event)
                done += 1
                if done % _PAGE == 0:
                    progress("exporting events", done, total)
        summary = writer.finish()
        progress("exporting events", total, total)
        return summary


@dataclass
class _CheckedFile:
    summary: ExportSummary
    journal_events: list[LoggedEvent]
    storage_dense: bool


def import_store(
    url: str, source: IO[bytes], *, name: str, progress: Progress | None = None
) -> ImportReport:
    """Import the export in ``source`` (seekable, read twice) into the empty store at ``url``.

    ``name`` is how messages name the file. Raises ``ExportFormatError`` for
    a damaged file, ``ImportRefusedError`` for a log that does not audit,
    ``StoreNotEmptyError`` for a store that is not empty (all three before
    anything is written), ``UnsupportedStoreError`` for ``memory:``.
    """
    progress = progress or silent
    store = open_log_store(url)
    checked = _check_file(source, name, progress)
    sections = {section.log: section for section in checked.summary.logs}
    identity = sections[JOURNAL].identity if JOURNAL in sections else None
    journal_table, storage_table = store_tables(store, identity)
    claims: tuple[Claim, ...] = ()
    if JOURNAL in sections:
        audit = check_journal_log(checked.journal_events, progress=progress)
        if not audit.report.ok:
            raise _not_auditing(name, JOURNAL, journal_problem(audit.report))
        claims = audit.claims
    checked.journal_events.clear()  # the second pass reads them from the file again
    renumber = STORAGE in sections and store.gapless_storage and not checked.storage_dense
    source.seek(0)
    with store.filling() as filling:
        for table in (journal_table, storage_table):
            reason = filling.occupied(table)
            if reason is not None:
                raise StoreNotEmptyError(
                    f"{store.where} is not empty ({reason}): an import needs an empty store; "
                    "nothing was written"
                )
        session = None
        if JOURNAL in sections:
            filling.create_log(journal_table)
        if STORAGE in sections:
            session = storage_session(filling.connection, url)
            create_storage_tables(session, CATALOG, store.where)
        tables = {JOURNAL: journal_table, STORAGE: storage_table}
        written = _fill(
            filling,
            reader=ExportReader(source, name),
            tables=tables,
            renumber=renumber,
            checked=checked,
            progress=progress,
        )
        if written.sha256 != checked.summary.sha256:
            raise ImportRefusedError(f"{name} changed while it was imported; nothing was written")
        if JOURNAL in sections:
            filling.insert_claims(journal_table, claims)
            if identity is not None:
                filling.record_identity(journal_table, identity)
            filling.finish_events(journal_table)
        if session is not None:
            filling.finish_events(storage_table)
            try:
                rebuild_inline_tables(session, store.where, CATALOG)
            except (RepairRefusedError, RepairFailedError) as error:
                raise _not_auditing(name, STORAGE, error.report.findings[0].line()) from None
    journal_audit = storage_audit = None
    if JOURNAL in sections:
        # The transparency tree is derived from the log, and an audit only reads:
        # opening the log to write builds the imported revisions' leaves and tiles.
        JournalLog(url, create=False, identity=identity).close()
        journal_audit = audit_journal_log(url, identity=identity, progress=progress)
        if not journal_audit.ok:
            raise _imported_unaudited(store, JOURNAL, journal_problem(journal_audit))
    if STORAGE in sections:
        storage_audit = audit_store(url, CATALOG)
        if not storage_audit.ok:
            raise _imported_unaudited(store, STORAGE, storage_audit.lines()[0])
    rebuilt = rebuild_projections(url, identity)
    return ImportReport(checked.summary, renumber, journal_audit, storage_audit, rebuilt)


def rebuild_projections(url: str, identity: str | None = None) -> tuple[str, ...]:
    """Rebuild every registered projection of a freshly imported store; one line each.

    The storage inline tables were rebuilt inside the import's transaction.
    This is the one place an import rebuilds projections. On PostgreSQL the
    log of a named Journal (``identity``) lives in its own schema unless the
    URL names one; its projections are rebuilt there.
    """
    lines = list(rebuild_all(url))
    journal_url = journal_store_url(url, identity)
    if journal_url != url:
        lines.extend(rebuild_all(journal_url))
    return tuple(lines)


def _not_auditing(name: str, log: str, problem: object) -> ImportRefusedError:
    return ImportRefusedError(
        f"{name}: the {log} log does not audit, nothing was written: {problem}", audit=True
    )


def _imported_unaudited(store: LogStore, log: str, problem: object) -> ImportAuditError:
    return ImportAuditError(f"{store.where}: imported, but its {log} log does not audit: {problem}")


def _check_file(source: IO[bytes], name: str, progress: Progress) -> _CheckedFile:
    """Read the whole file once and check it; keep the Journal's events (to audit them)."""
    size = _size(source)
    reader = ExportReader(source, name)
    journal_events: list[LoggedEvent] = []
    storage_dense, last_storage = True, 0
    task = f"checking {name}"
    progress(task, 0, size)
    for number, item in enumerate(reader, start=1):
        if isinstance(item, LogSection):
            if item.log not in LOGS:
                raise ImportRefusedError(
                    f"{name}: log {item.log!r} is not one this build imports "
                    f"({', '.join(LOGS)}); nothing was written"
                )
        elif item.log == JOURNAL:
            journal_events.append(item)
        else:
            storage_dense = storage_dense and item.id == last_storage + 1
            last_storage = item.id
        if number % _EVERY == 0:
            progress(task, min(source.tell(), size), size)
    progress(task, size, size)
    assert reader.summary is not None  # the reader returned: the file was intact
    if not reader.summary.logs:
        raise ImportRefusedError(f"{name} holds no log; nothing was written")
    return _CheckedFile(reader.summary, journal_events, storage_dense)


def _fill(
    filling: LogFilling,
    *,
    reader: ExportReader,
    tables: dict[str, EventTable],
    renumber: bool,
    checked: _CheckedFile,
    progress: Progress,
) -> ExportSummary:
    """Copy every event of the file into the filling transaction, a page at a time."""
    total, done = checked.summary.total, 0
    table: EventTable | None = None
    renumbering, next_id = False, 0
    page: list[LoggedEvent] = []

    def flush() -> None:
        nonlocal done
        if page:
            assert table is not None
            filling.insert_events(table, page)
            done += len(page)
            page.clear()
            progress("importing events", done, total)

    progress("importing events", done, total)
    for item in reader:
        if isinstance(item, LogSection):
            flush()
            table = tables[item.log]
            renumbering, next_id = renumber and item.log == STORAGE, 0
            continue
        next_id += 1
        page.append(replace(item, id=next_id) if renumbering else item)
        if len(page) == _PAGE:
            flush()
    flush()
    assert reader.summary is not None  # the reader returned: the file was intact
    return reader.summary


def _size(source: IO[bytes]) -> int:
    try:
        return os.fstat(source.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        return 0
