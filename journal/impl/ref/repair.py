"""The explicit repair of a Journal store: rebuild what it derives from its log.

A Journal store keeps, beside its log (events and digest claims), two things
derived from it: the transparency tree (one leaf per revision and the tiles
over them) and the persisted chain projection. An audit only reads; when it
finds either damaged (a leaf or tile edited or deleted, a projection row or
position changed, a table dropped), this repair rebuilds both from the log.

It refuses, changing nothing, while the log itself does not audit (an
edited event, a deleted or edited digest claim): rebuilding from such a log
would bless the edit (a claim re-derived from a forged revision would hide
the forgery). Restore such a store from a backup.
"""

from __future__ import annotations

from dataclasses import dataclass

from nenjim.domain.journal.errors import JournalIntegrityError
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.store.audit_report import AuditReport
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal.impl.ref.audit import audit_open_log, journal_problem
from nenjim.journal.impl.ref.chain_table import rebuild_chain_table
from nenjim.journal.impl.ref.log import JournalLog


class JournalRepairRefusedError(JournalIntegrityError):
    """The log itself does not audit: nothing derived from it was rebuilt."""


@dataclass(frozen=True, slots=True)
class JournalRepairReport:
    """The audit before the repair and the one after (``None``: nothing needed repair)."""

    before: AuditReport
    after: AuditReport | None

    @property
    def repaired(self) -> bool:
        """Whether anything was rebuilt."""
        return self.after is not None


def repair_journal_store(
    store: str | None, *, identity: str | None = None, progress: Progress | None = None
) -> JournalRepairReport:
    """Audit the Journal store ``store``; if only what it derives from its log is damaged,
    rebuild the transparency tree and the chain projection from the log and audit again.

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise). Raises :class:`JournalRepairRefusedError` when the log itself
    does not audit, and :class:`JournalIntegrityError` if the store still does
    not audit after the rebuild (a writer edited it meanwhile).
    """
    with JournalLog(store, read_only=True, identity=identity) as log:
        before = audit_open_log(log, progress=progress)
        if before.ok:
            return JournalRepairReport(before, None)
        if not before.repairable:
            raise JournalRepairRefusedError(
                f"repair refused, nothing changed: the log itself does not audit: "
                f"{journal_problem(before)}"
            )
        log.tiled_log.rebuild_entries()
        rebuild_chain_table(LogReader(log), projection_recorder(log), progress)
        after = audit_open_log(log, progress=progress)
        if not after.ok:
            raise JournalIntegrityError(
                f"rebuilt, but the store still does not audit: {journal_problem(after)}"
            )
        return JournalRepairReport(before, after)
