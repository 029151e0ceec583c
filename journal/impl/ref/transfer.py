"""The Journal's side of moving a log: where its events live, its claims, its audit before import.

An export carries the Journal log's events and its owner's identity, never
its digest claims: they are derived from the events (each accepted revision
claims its digest for its artifact) and rebuilt on import. Before anything
is written to the target store, :func:`check_journal_log` replays the
events into an in-memory log and audits it exactly as ``nenjim journal
audit`` does, so an import of a log that breaks a chain rule writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eventsourcing.persistence import IntegrityError, Notification, StoredEvent

from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.errors import JournalIntegrityError, one_line
from nenjim.infrastructure.log import Claim, ClaimConflictError, LogReader
from nenjim.infrastructure.log.transfer import EventTable, LoggedEvent, application_log
from nenjim.infrastructure.store.audit_report import AuditReport, Finding
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.store.urls import MEMORY_URL
from nenjim.journal.impl.ref.audit import LOG_TABLE, audit_open_log
from nenjim.journal.impl.ref.chain_log import decode_event
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog, named_schema

JOURNAL_EVENTS = application_log(JournalLog.name)
"""The Journal log's events table (``journal_events``), its claims and identity rows."""


def journal_events_table(url_schema: str | None, identity: str | None) -> EventTable:
    """Where the Journal log of ``identity`` lives in a store whose URL names ``url_schema``.

    The rule of every Journal: the URL's ``?schema=``, else ``journal_<NAME>``
    for a named Journal, else ``public`` (SQLite has no schemas).
    """
    return JOURNAL_EVENTS.in_schema(url_schema or named_schema(identity) or "public")


@dataclass(frozen=True, slots=True)
class CheckedJournalLog:
    """The audit of a Journal log given as events, and the digest claims its events make."""

    report: AuditReport
    claims: tuple[Claim, ...]


def check_journal_log(
    events: Sequence[LoggedEvent], *, progress: Progress | None = None
) -> CheckedJournalLog:
    """Audit the Journal log made of ``events`` (in order) in memory; derive its claims.

    The events must be numbered 1, 2, 3, ...: a Journal's log has no gaps on
    any store. Everything ``nenjim journal audit`` checks is checked; the
    report's finding is the first inconsistency found.
    """
    for expected, event in enumerate(events, start=1):
        if event.id != expected:
            problem = (
                f"notification {event.id} follows notification {expected - 1}: "
                "notification ids have no gaps"
            )
            return _refused(problem)
    with JournalLog(MEMORY_URL) as log:
        try:
            claims = replay_journal_events(log, events)
            return CheckedJournalLog(audit_open_log(log, progress=progress), claims)
        except JournalIntegrityError as error:
            return _refused(str(error))
        except ClaimConflictError as error:
            return _refused(f"two artifacts claim one revision digest: {error}")
        except IntegrityError as error:
            return _refused(f"two events at one position of an artifact's stream: {error}")


def replay_journal_events(log: JournalLog, events: Sequence[LoggedEvent]) -> tuple[Claim, ...]:
    """Append ``events`` as stored, with the digest claims they make, to an empty
    in-memory Journal log (which numbers them 1, 2, 3, ...); the claims.

    Raises ``JournalIntegrityError`` for an event that does not decode,
    ``ClaimConflictError`` for a digest two artifacts claim and the
    library's ``IntegrityError`` for two events at one stream position.
    """
    claims = _claims(LogReader(log), events)
    log.recorder.insert_events(
        [StoredEvent(e.originator_id, e.originator_version, e.topic, e.state) for e in events],
        claims=list(claims),
    )
    log.tiled_log.catch_up_entries()  # the events came without their leaves: derive them
    return claims


def _refused(problem: str) -> CheckedJournalLog:
    finding = Finding("log", LOG_TABLE, None, None, "", one_line(problem))
    live = {"artifacts": 0, "revisions": 0}
    return CheckedJournalLog(AuditReport("the exported Journal log", 0, live, (finding,)), ())


def _claims(reader: LogReader, events: Sequence[LoggedEvent]) -> tuple[Claim, ...]:
    """Each accepted revision's claim of its digest for its artifact (as an append writes it)."""
    claims = []
    for event in events:
        decoded = decode_event(
            reader,
            Notification(
                id=event.id,
                originator_id=event.originator_id,
                originator_version=event.originator_version,
                topic=event.topic,
                state=event.state,
            ),
        )
        if isinstance(decoded, JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted):
            digest, owner = getattr(decoded, "digest", None), getattr(decoded, "coordinate", None)
            if isinstance(digest, str) and isinstance(owner, str):
                # A malformed event claims nothing: the audit names what is wrong with it.
                claims.append(Claim(DIGEST_NAMESPACE, digest, owner))
    return tuple(claims)
