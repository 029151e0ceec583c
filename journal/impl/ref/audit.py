"""Audit of a Journal log: every stored text, digest, chain link and digest claim.

The audit trusts nothing derived: it reads the raw notification log in
order, re-parses every stored text, recomputes its digest, replays the
domain's chain and history rules from scratch, and compares the digest
claims table with the revisions it saw. It reports the first inconsistency.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.journal.chain import JournalChain, accept_revision, chain_id
from domain.journal.errors import JournalError
from domain.journal.parser import parse_journal
from domain.journal.values import ArtifactCoordinate, Sha256Digest
from journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog
from journal.impl.ref.progress import Progress, silent

_PAGE = 500


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What the audit read, and the first problem found (``None``: consistent)."""

    events: int
    artifacts: int
    revisions: int
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """True if the log is consistent."""
        return self.problem is None


class _InconsistencyError(Exception):
    """The first inconsistency found; its message is the report's problem."""


def audit_journal_log(
    store: str | None, *, identity: str | None = None, progress: Progress | None = None
) -> AuditReport:
    """Audit the Journal log in ``store`` (a store URL; ``None``: ``$NENJIM_STORE_URL``).

    The store must exist and hold a Journal log (``StoreUnavailableError``
    otherwise: nothing is created); ``identity`` (see ``journal.impl.ref.log``)
    checks whose it is. ``progress`` is told how many events are read.
    """
    log = JournalLog(store, create=False, identity=identity)
    try:
        return _Audit(log, progress or silent).run()
    finally:
        log.close()


class _Audit:
    def __init__(self, log: JournalLog, progress: Progress) -> None:
        self.log = log
        self.progress = progress
        self.chains: dict[ArtifactCoordinate, JournalChain] = {}
        self.owners: dict[Sha256Digest, ArtifactCoordinate] = {}
        self.events = 0

    def run(self) -> AuditReport:
        try:
            self._events()
            self._claims()
        except _InconsistencyError as problem:
            return self._report(str(problem))
        return self._report(None)

    def _report(self, problem: str | None) -> AuditReport:
        return AuditReport(self.events, len(self.chains), len(self.owners), problem)

    def _events(self) -> None:
        position = 0
        total = self.log.recorder.max_notification_id() or 0
        while True:
            self.progress("auditing events", min(position, total), total)
            page = self.log.recorder.select_notifications(
                start=position, limit=_PAGE, inclusive_of_start=False
            )
            for notification in page:
                if notification.id != position + 1:
                    raise _InconsistencyError(
                        f"notification ids jump from {position} to {notification.id}"
                    )
                position = notification.id
                self.events += 1
                try:
                    event = self.log.mapper.to_domain_event(notification)
                except Exception as error:
                    raise _InconsistencyError(
                        f"notification {notification.id}: cannot decode the stored event: {error}"
                    ) from None
                self._event(notification.id, event)
            if len(page) < _PAGE:
                self.progress("auditing events", total, total)
                return

    def _event(self, position: int, event: object) -> None:
        if not isinstance(event, JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted):
            raise _InconsistencyError(
                f"notification {position}: unexpected event {type(event).__name__}"
            )
        where = f"notification {position} ({event.coordinate} {event.journal_version})"
        try:
            revision = parse_journal(event.text)
        except JournalError as error:
            raise _InconsistencyError(f"{where}: stored text does not parse: {error}") from None
        if str(revision.digest) != event.digest:
            raise _InconsistencyError(
                f"{where}: stored text digests to {revision.digest}, the event says {event.digest}"
            )
        if (str(revision.coordinate), str(revision.version)) != (
            event.coordinate,
            event.journal_version,
        ):
            raise _InconsistencyError(
                f"{where}: stored text is {revision.coordinate} {revision.version}"
            )
        if event.originator_id != chain_id(revision.coordinate):
            raise _InconsistencyError(f"{where}: stored on another artifact's stream")
        chain = self.chains.get(revision.coordinate)
        expected = 1 if chain is None else chain.version + 1
        if event.originator_version != expected:
            raise _InconsistencyError(
                f"{where}: stream position {event.originator_version}, expected {expected}"
            )
        try:
            chain, is_new = accept_revision(chain, revision, self.owners.get)
        except JournalError as error:
            raise _InconsistencyError(f"{where}: breaks a chain rule: {error}") from None
        if not is_new:
            raise _InconsistencyError(f"{where}: repeats an accepted revision")
        chain.collect_events()
        self.chains[revision.coordinate] = chain
        self.owners[revision.digest] = revision.coordinate

    def _claims(self) -> None:
        claimed = {c.key: c.owner for c in self.log.claims(DIGEST_NAMESPACE)}
        for digest, coordinate in self.owners.items():
            owner = claimed.pop(str(digest), None)
            if owner != str(coordinate):
                raise _InconsistencyError(
                    f"digest index: {digest} of {coordinate} is claimed by {owner!r}"
                )
        if claimed:
            key, owner = next(iter(claimed.items()))
            raise _InconsistencyError(f"digest index: {key} claimed by {owner} has no revision")
