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

import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from nenjim.domain.journal.chain import check_history
from nenjim.domain.journal.document import JournalDocument, JournalRevision
from nenjim.domain.journal.errors import (
    ChainViolation,
    JournalChainError,
    JournalError,
    JournalIntegrityError,
    one_line,
)
from nenjim.domain.journal.parser import (
    ParsedBlocks,
    forget_shared_releases,
    parse_journal_blocks,
)
from nenjim.domain.journal.values import Sha256Digest
from nenjim.domain.transparency import JournalLeaf
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.store.audit_report import AuditReport, Finding
from nenjim.infrastructure.store.progress import Progress, silent
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.chain_table import ProjectionCheck, text_loader
from nenjim.journal.impl.ref.digest_index import check_digest_claims
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency_audit import TreeCheck
from nenjim.projections.journal_chains import ChainFold, JournalWorldview, StoredRevision

LOG_TABLE = "journal_events"
"""Where a finding in the log itself is: its events, or the digest claims they make."""
DERIVED_TABLE = "journal derived tables"
"""Where a finding in what the store derives from its log is: the persisted chain projection
or the transparency tree, which ``nenjim journal repair`` rebuilds."""
HEAD_CACHE = 256
"""Parsed chain heads kept for the history rule and for their release blocks, which the
successor's parse takes as parsed where equal; a head not kept is read again from the log
and parsed again. A log interleaves its artifacts as they were appended, so a successor
finds its head kept only when the artifacts appended between them are fewer than this:
8,192 heads halved the CPU time of a log of 4,000 artifacts appended in turns, but held
90 MiB more where heads had 25 releases each, and a registry's artifacts outnumber any
such bound."""
SHARED_RELEASES_SPAN = 100
"""Texts parsed between two emptyings of the parser's release cache: every release of the
log would stay in it (up to its bound) while the audit keeps none."""


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


class _Head(NamedTuple):
    """What the audit keeps of an artifact's chain: its head, and the chain's length."""

    position: int
    version: str
    digest: str


class _Audit:
    """One pass over the log, a page of events at a time, holding per artifact only its
    head (:class:`_Head`) and a bounded cache of parsed heads: what the audit holds
    grows with the artifacts, not with the revisions or their texts."""

    def __init__(self, log: JournalLog, progress: Progress) -> None:
        self.log = log
        self.reader = LogReader(log)
        self.progress = progress
        self.fold = ChainFold(JournalWorldview.empty(), keep=False)
        self.heads: dict[str, _Head] = {}
        self.parsed: OrderedDict[str, tuple[JournalDocument, ParsedBlocks]] = OrderedDict()
        self.projection = ProjectionCheck(log)
        self.tree = TreeCheck(log)
        self.claims = _Fingerprint()  # of every (digest, artifact) the log's revisions claim
        self.events = 0

    def run(self) -> AuditReport:
        try:
            self._fold(0)
            claimed = _Fingerprint.of(c for page in self.log.digest_claim_pages() for c in page)
            if claimed != self.claims:
                check_digest_claims(self._owners(), self.log.digest_claims(), self._caught_up)
        except JournalIntegrityError as problem:
            return self._report(one_line(str(problem)))
        derived = self.projection.problem() or self.tree.problem()
        if derived is not None:
            return self._report(one_line(derived), derived=True)
        return self._report(None)

    def _fold(self, after: int) -> None:
        """Check every event after position ``after``."""
        total = self.reader.last_position()
        for position, event in read_after(self.reader, after):
            self.progress("auditing events", position, total)
            self.events += 1
            if self.events % SHARED_RELEASES_SPAN == 0:
                forget_shared_releases()
            row = self.fold.add_row(position, event)
            self._revision(row, event.text)  # type: ignore[attr-defined]  # a checked event
        self.progress("auditing events", total, total)

    def _caught_up(self) -> dict[str, str]:
        """Check the events appended since the fold, then every revision's owner."""
        self._fold(self.events)
        return self._owners()

    def _owners(self) -> dict[str, str]:
        """Every revision's digest and artifact (read again: only a difference needs them)."""
        return {digest: coordinate for coordinate, _, digest in self._checked(self.events)}

    def _checked(self, through: int) -> Iterator[tuple[str, str, str]]:
        """``(artifact, Journal version, digest)`` of the revisions checked up to position
        ``through``, read again from the log."""
        for position, event in read_after(self.reader, 0):
            if position > through:
                return
            yield event.coordinate, event.journal_version, event.digest  # type: ignore[attr-defined]

    def _report(self, problem: str | None, *, derived: bool = False) -> AuditReport:
        findings: tuple[Finding, ...] = ()
        if problem is not None:
            where = DERIVED_TABLE if derived else LOG_TABLE
            findings = (Finding("table" if derived else "log", where, None, None, "", problem),)
        live = {"artifacts": len(self.heads), "revisions": self.claims.count}
        return AuditReport(self.log.where, self.events, live, findings)

    def _revision(self, row: tuple[int, str, str, str], text: str) -> None:
        """Digest and parse one stored text, compare it with its event, apply the chain's
        and history's rules."""
        position, coordinate, version_key, digest = row
        where = f"notification {position} ({coordinate} {version_key})"
        head = self.heads.get(coordinate)
        kept = self._parsed_head(coordinate, head)
        # The parse digests the text's bytes: the digest is checked from its result, and
        # before a parse error is reported, which a wrong digest precedes.
        try:
            # The head's blocks: in a log that interleaves artifacts, the text parsed last
            # is another artifact's, whose blocks would not apply.
            revision, blocks = parse_journal_blocks(text, None if kept is None else kept[1])
        except JournalError as error:
            _check_digest(where, Sha256Digest.of_text(text), digest)
            raise JournalIntegrityError(f"{where}: stored text does not parse: {error}") from None
        _check_digest(where, revision.digest, digest)
        if (str(revision.coordinate), str(revision.version)) != (coordinate, version_key):
            raise JournalIntegrityError(
                f"{where}: stored text is {revision.coordinate} {revision.version}"
            )
        try:
            self._chain_rules(revision, head, kept)
        except JournalError as error:
            raise JournalIntegrityError(f"{where}: breaks a chain rule: {error}") from None
        self.heads[coordinate] = _Head(position, version_key, digest)
        self.projection.add(row)
        text_digest = bytes.fromhex(str(revision.digest)[len(_DIGEST_PREFIX) :])
        self.tree.add(position, JournalLeaf(coordinate, version_key, text_digest).data())
        self._keep(coordinate, revision.document, blocks)
        self.claims.add(digest, coordinate)

    def _chain_rules(
        self,
        revision: JournalRevision,
        head: _Head | None,
        kept: tuple[JournalDocument, ParsedBlocks] | None,
    ) -> None:
        """The rules ``accept_revision`` applies, in its order and with its messages, with the
        chain's head alone (``kept``: parsed, if it could be): only a broken link reads
        earlier revisions (:meth:`_foreign`)."""
        artifact = str(revision.coordinate)
        predecessor = revision.predecessor
        if head is None:
            if predecessor is not None:
                raise self._foreign(artifact, str(predecessor))
            return
        if predecessor is None:
            raise JournalChainError(
                ChainViolation.DUPLICATE_GENESIS,
                f"the chain already has a genesis (head {head.digest} at {head.version})",
                artifact=artifact,
            )
        if str(predecessor) != head.digest:
            raise self._foreign(artifact, str(predecessor), head)
        if str(revision.version) <= head.version:
            raise JournalChainError(
                ChainViolation.NON_INCREASING_VERSION,
                f"JOURNAL_VERSION {revision.version} is not later than the "
                f"predecessor's {head.version}",
                artifact=artifact,
            )
        document = kept[0] if kept is not None else self._head_document(artifact, head)
        check_history(document, revision.document)

    def _foreign(self, artifact: str, predecessor: str, head: _Head | None = None) -> JournalError:
        """The error of a ``PREDECESSOR`` that is not the head: an earlier revision of the
        chain (a fork), another artifact's, or none accepted."""
        owner = next(
            ((c, v) for c, v, known in self._checked(self.events - 1) if known == predecessor),
            None,
        )
        if owner is not None and owner[0] == artifact and head is not None:
            return JournalChainError(
                ChainViolation.FORK,
                f"PREDECESSOR {predecessor} is the revision at {owner[1]}; expected the head "
                f"{head.digest} at {head.version}",
                artifact=artifact,
            )
        if owner is not None and owner[0] != artifact:
            return JournalChainError(
                ChainViolation.CROSS_ARTIFACT_PREDECESSOR,
                f"PREDECESSOR {predecessor} is a revision of {owner[0]}",
                artifact=artifact,
            )
        return JournalChainError(
            ChainViolation.UNKNOWN_PREDECESSOR,
            f"PREDECESSOR {predecessor} is not an accepted revision",
            artifact=artifact,
        )

    def _keep(self, coordinate: str, document: JournalDocument, blocks: ParsedBlocks) -> None:
        parsed = self.parsed
        parsed[coordinate] = (document, blocks)
        parsed.move_to_end(coordinate)
        if len(parsed) > HEAD_CACHE:
            parsed.popitem(last=False)

    def _parsed_head(
        self, coordinate: str, head: _Head | None
    ) -> tuple[JournalDocument, ParsedBlocks] | None:
        """The head parsed, with its release blocks: kept, or read again from the log now (a
        head the cache dropped), so that its successor's parse takes its blocks as parsed.

        ``None`` for a genesis, or for a head that cannot be read again: it was read and
        checked earlier in this pass, so only a store changed under the audit fails here,
        and the history rule then reads it again (:meth:`_head_document`) and reports what
        it finds in its turn, after the successor's own findings.
        """
        kept = self.parsed.get(coordinate)
        if kept is not None or head is None:
            return kept
        try:
            text = self._stored_head(coordinate, head).text
            revision, blocks = parse_journal_blocks(text)
        except JournalError:
            return None
        if (str(revision.coordinate), str(revision.version)) != (coordinate, head.version):
            return None
        return revision.document, blocks

    def _head_document(self, coordinate: str, head: _Head) -> JournalDocument:
        """The parsed head, read again from the log (and checked again)."""
        return self._stored_head(coordinate, head).revision.document

    def _stored_head(self, coordinate: str, head: _Head) -> StoredRevision:
        (stored,) = StoredRevision.from_rows(
            [(head.position, coordinate, head.version, head.digest)],
            text_loader(self.reader),
        )
        return stored


_DIGEST_PREFIX = "sha256:"


def _check_digest(where: str, digest: Sha256Digest, claimed: str) -> None:
    """Refuse a stored text whose digest is not its event's."""
    if str(digest) != claimed:
        raise JournalIntegrityError(
            f"{where}: stored text does not digest to its event's {claimed}"
        )


class _Fingerprint:
    """An order-free summary of ``(digest, artifact)`` pairs: their count and the sum of
    their hashes, so the log's revisions and the store's claims compare without either
    being held (a difference is then looked for pair by pair).

    The hashes are keyed with a key drawn for each process, so no one who edits a store
    can choose claims whose hashes add up to those of the claims they replace.
    """

    __slots__ = ("count", "total")
    _KEY = secrets.token_bytes(16)

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> _Fingerprint:
        """The fingerprint of ``pairs``."""
        fingerprint = cls()
        for digest, owner in pairs:
            fingerprint.add(digest, owner)
        return fingerprint

    def add(self, digest: str, owner: str) -> None:
        """Count one more pair."""
        key = hashlib.blake2b(f"{digest} {owner}".encode(), digest_size=16, key=self._KEY)
        self.total = (self.total + int.from_bytes(key.digest())) % (1 << 128)
        self.count += 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Fingerprint):
            return NotImplemented
        return (self.count, self.total) == (other.count, other.total)

    __hash__ = None  # type: ignore[assignment]
