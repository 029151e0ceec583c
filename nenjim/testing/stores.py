"""Stores under test: a recorded log replayed into a fresh store, or the store it came from."""

from __future__ import annotations

import io
from collections.abc import Callable
from types import TracebackType

from nenjim.admin.transfer import JOURNAL, STORAGE, import_store
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.persistence import CATALOG, Persistence
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.infrastructure.store.urls import MEMORY_URL, resolve_store_url
from nenjim.infrastructure.tracking.projections import Row, projection_recorder
from nenjim.journal.impl.ref.audit import audit_journal_log, audit_open_log
from nenjim.journal.impl.ref.chain_table import PersistedChains, persisted_rows
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transfer import replay_journal_events
from nenjim.projections.journal_chains import JournalChainsProjection, JournalWorldview
from nenjim.testing.memory import apply_storage_events
from nenjim.testing.recorded import RecordedLog

PersistedJournal = tuple[JournalWorldview, list[Row]]
"""The Journal chain projection a store keeps: its view, and its persisted rows."""


class StoreUnderTest:
    """A store holding a recorded log's logs, read back through the engine.

    ``journal`` is the Journal chain projection the store keeps, caught up
    with its log and written back (``None`` without a Journal log),
    ``journal_rows`` the rows it keeps for it, ``persistence`` the domain
    Persistence open on it (``None`` without a storage log). Close it, or
    use it as a context manager.
    """

    def __init__(
        self,
        url: str,
        journal: PersistedJournal | None,
        persistence: Persistence | None,
        audits: Callable[[], list[str]],
        closers: list[Callable[[], None]],
    ) -> None:
        self.url = url
        self.kind = resolve_store_url(url).kind
        self.journal = None if journal is None else journal[0]
        self.journal_rows = None if journal is None else journal[1]
        self.persistence = persistence
        self._audits = audits
        self._closers = closers

    def audit(self) -> list[str]:
        """One line per problem the audits find (``nenjim journal audit`` and ``nenjim
        storage audit``; the in-memory storage backend keeps no log to audit); ``[]``: clean."""
        return self._audits()

    def close(self) -> None:
        """Release the store (idempotent)."""
        while self._closers:
            self._closers.pop()()

    def __enter__(self) -> StoreUnderTest:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def replay(log: RecordedLog, store: str) -> StoreUnderTest:
    """Replay ``log`` into the empty store ``store`` (``memory:``, ``sqlite:``, ``postgresql://``).

    A durable store gets it through ``nenjim log import`` (checked, copied
    in one transaction, audited, projections rebuilt); ``memory:`` gets the
    Journal's events as stored and the storage events through the SPI.
    """
    if not resolve_store_url(store).is_durable:
        return _replay_in_memory(log)
    import_store(store, io.BytesIO(log.data), name=log.name)
    return open_store(store, log)


def open_store(store: str, log: RecordedLog) -> StoreUnderTest:
    """The durable store ``store``, holding the logs ``log`` names (e.g. the one it was recorded
    from)."""
    closers: list[Callable[[], None]] = []
    journal: PersistedJournal | None = None
    persistence = None
    if JOURNAL in log.logs:
        journal_log = JournalLog(store, create=False, identity=log.identity)
        closers.append(journal_log.close)  # revisions read their texts from the open log
        journal = _persisted_journal(journal_log)
    if STORAGE in log.logs:
        persistence = Persistence.open(store)
        closers.append(persistence.close)

    def audits() -> list[str]:
        problems: list[str] = []
        if JOURNAL in log.logs:
            report = audit_journal_log(store, identity=log.identity)
            problems.extend(f"journal: {finding.log}" for finding in report.findings)
        if STORAGE in log.logs:
            problems.extend(f"storage: {line}" for line in audit_store(store, CATALOG).lines())
        return problems

    return StoreUnderTest(store, journal, persistence, audits, closers)


def _replay_in_memory(log: RecordedLog) -> StoreUnderTest:
    closers: list[Callable[[], None]] = []
    journal: PersistedJournal | None = None
    persistence = None
    journal_log: JournalLog | None = None
    if JOURNAL in log.logs:
        journal_log = JournalLog(MEMORY_URL)
        closers.append(journal_log.close)
        replay_journal_events(journal_log, log.events_of(JOURNAL))
        journal = _persisted_journal(journal_log)
    if STORAGE in log.logs:
        persistence = Persistence.in_memory()
        closers.append(persistence.close)
        apply_storage_events(persistence.backend, log.events_of(STORAGE))

    def audits() -> list[str]:
        if journal_log is None:
            return []
        return [f"journal: {finding.log}" for finding in audit_open_log(journal_log).findings]

    return StoreUnderTest(MEMORY_URL, journal, persistence, audits, closers)


def _persisted_journal(journal_log: JournalLog) -> PersistedJournal:
    """Load the store's chain projection, catch it up with the log and write it back."""
    recorder = projection_recorder(journal_log)
    persisted = PersistedChains(JournalChainsProjection(), LogReader(journal_log), recorder)
    view = persisted.catch_up()
    persisted.persist()
    return view, list(persisted_rows(recorder))
