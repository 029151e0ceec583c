"""Audit of a Journal log: every check start-up makes, plus every stored text parsed.

The audit trusts nothing derived. It reads the raw notification log in
order and folds it with the projection's checks (the ones every start-up
makes: consecutive notification ids, known event topics with exactly their
fields, each event on its artifact's stream at the next stream position,
chain links, later versions, text digests); it then parses every stored
text, compares it with its event (artifact, Journal version, predecessor)
and replays the domain's chain and history rules from scratch; last it
compares the digest claims with the revisions, the persisted chain
projection (its tracking row and every row) with the fold, and the stored
transparency tree (leaves and tiles) with the tree recomputed from the texts.
It reports the first inconsistency, in one line, and writes nothing: the
store is opened as it is (no leaf is caught up, no table created), so what
is missing is reported, not restored. The projection and the tree are derived
from the log; ``nenjim journal repair`` rebuilds them (see ``repair``).

What the log alone cannot reveal, it cannot find: an edit that stays
consistent (a head's text, digest and claim forged together, or the tail of
the log cut with its claims) needs an anchor outside the log.
"""

from __future__ import annotations

from nenjim.domain.journal.chain import JournalChain, accept_revision
from nenjim.domain.journal.errors import JournalError, JournalIntegrityError, one_line
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, Sha256Digest
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.store.audit_report import AuditReport, Finding
from nenjim.infrastructure.store.progress import Progress, silent
from nenjim.infrastructure.tracking.projections import Row
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.chain_table import chain_row, projection_problem
from nenjim.journal.impl.ref.digest_index import check_digest_index
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency_audit import tree_problem
from nenjim.projections.journal_chains import ChainFold, JournalWorldview, StoredRevision

LOG_TABLE = "journal_events"
"""Where a finding in the log itself is: its events, or the digest claims they make."""
DERIVED_TABLE = "journal derived tables"
"""Where a finding in what the store derives from its log is: the persisted chain projection
or the transparency tree, which ``nenjim journal repair`` rebuilds."""


def journal_problem(report: AuditReport) -> str | None:
    """The first problem a Journal audit found, as one line (``None``: consistent)."""
    return report.findings[0].log if report.findings else None


def audit_journal_log(
    store: str | None, *, identity: str | None = None, progress: Progress | None = None
) -> AuditReport:
    """Audit the Journal log in ``store`` (a store URL; ``None``: ``$NENJIM_STORE_URL``).

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise: nothing is created); ``identity`` (see ``nenjim.journal.impl.ref.log``)
    checks whose it is. ``progress`` is told how many events are read.
    """
    with JournalLog(store, read_only=True, identity=identity) as log:
        return audit_open_log(log, progress=progress)


def audit_open_log(log: JournalLog, *, progress: Progress | None = None) -> AuditReport:
    """Audit the Journal log ``log`` (any store kind, ``memory:`` included), leaving it open."""
    return _Audit(log, progress or silent).run()


class _Audit:
    def __init__(self, log: JournalLog, progress: Progress) -> None:
        self.log = log
        self.reader = LogReader(log)
        self.progress = progress
        self.chains: dict[ArtifactCoordinate, JournalChain] = {}
        self.owners: dict[Sha256Digest, ArtifactCoordinate] = {}
        self.rows: list[Row] = []  # the chain projection's rows, as the fold makes them
        self.events = 0

    def run(self) -> AuditReport:
        try:
            fold = ChainFold(JournalWorldview.empty())
            self._fold(fold, 0)
            check_digest_index(
                fold.view(),
                self.log.digest_claims(),
                lambda: self._fold(fold, fold.view().position),
            )
        except JournalIntegrityError as problem:
            return self._report(one_line(str(problem)))
        derived = projection_problem(self.log, self.rows) or tree_problem(self.log)
        if derived is not None:
            return self._report(one_line(derived), derived=True)
        return self._report(None)

    def _fold(self, fold: ChainFold, after: int) -> JournalWorldview:
        """Check every event after position ``after``; the view of everything folded."""
        total = self.reader.last_position()
        for position, event in read_after(self.reader, after):
            self.progress("auditing events", position, total)
            self.events += 1
            self._revision(fold.add(position, event))
        self.progress("auditing events", total, total)
        return fold.view()

    def _report(self, problem: str | None, *, derived: bool = False) -> AuditReport:
        findings: tuple[Finding, ...] = ()
        if problem is not None:
            where = DERIVED_TABLE if derived else LOG_TABLE
            findings = (Finding("table" if derived else "log", where, None, None, "", problem),)
        live = {"artifacts": len(self.chains), "revisions": len(self.owners)}
        return AuditReport(self.log.where, self.events, live, findings)

    def _revision(self, stored: StoredRevision) -> None:
        """Parse one stored text, compare it with its event, apply the domain's rules."""
        self.rows.append(chain_row(stored))
        where = f"notification {stored.position} ({stored.coordinate} {stored.version_key})"
        try:
            revision = parse_journal(stored.text)
        except JournalError as error:
            raise JournalIntegrityError(f"{where}: stored text does not parse: {error}") from None
        if (str(revision.coordinate), str(revision.version)) != (
            stored.coordinate,
            stored.version_key,
        ):
            raise JournalIntegrityError(
                f"{where}: stored text is {revision.coordinate} {revision.version}"
            )
        chain = self.chains.get(revision.coordinate)
        try:
            chain, is_new = accept_revision(chain, revision, self.owners.get)
        except JournalError as error:
            raise JournalIntegrityError(f"{where}: breaks a chain rule: {error}") from None
        if not is_new:
            raise JournalIntegrityError(f"{where}: repeats an accepted revision")
        chain.collect_events()
        self.chains[revision.coordinate] = chain
        self.owners[revision.digest] = revision.coordinate
