"""Atomic, filesystem-independent ingestion of Journal texts (not public)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from uuid import UUID

from eventsourcing.domain import CanMutateAggregate
from eventsourcing.persistence import IntegrityError

from nenjim.domain.journal.chain import JournalChain, accept_revision
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.errors import (
    ChainViolation,
    JournalChainError,
    JournalConflictError,
    JournalError,
    JournalIntegrityError,
)
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, Sha256Digest
from nenjim.infrastructure.log import ClaimConflictError, LogReader
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal.impl.ref.chain_log import catch_up, share
from nenjim.journal.impl.ref.chain_table import PersistedChains
from nenjim.journal.impl.ref.digest_index import check_digest_index
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection, JournalWorldview, KnownTexts

ChainEvent = CanMutateAggregate[UUID]
# The file of the revision at a position of an ingestion (``None``: none), for errors.
_Source = Callable[[int, JournalRevision], Path | str | None]

# A lost race re-reads the head and decides again; each retry follows a
# competitor's successful append, so few are ever needed.
_MAX_ATTEMPTS = 8


class JournalIngestion:
    """Decides revisions against their chains, appends them and updates the projection.

    Each call is one atomic ingestion: on any error nothing is appended and
    the published worldview is unchanged. Threads may share an ingestion. A
    one-revision ingestion decides under the ingestion's lock but appends
    outside it, so concurrent ingestions of different artifacts share commits
    (group commit); one of an artifact that is being appended waits until
    that append is published. An ingestion of several revisions waits until
    no append is in flight and holds the lock throughout.
    """

    def __init__(
        self, log: JournalLog, projection: JournalChainsProjection, *, persisted: bool = False
    ) -> None:
        self._log = log
        self._reader = LogReader(log)
        self._projection = projection
        # With ``persisted``, the projection starts from (and is written back to) the
        # copy kept in the log's store; without, it folds the whole log in memory.
        self._persisted = (
            PersistedChains(
                projection,
                self._reader,
                projection_recorder(log),
                where=log.location.display,
                read_only=log.read_only,
            )
            if persisted
            else None
        )
        self._lock = threading.RLock()
        self._landed = threading.Condition(self._lock)
        # Artifacts whose one-revision append runs outside the lock, and the texts
        # those appends decided (offered to whichever publish folds their events).
        self._in_flight: set[ArtifactCoordinate] = set()
        self._known_in_flight: dict[str, JournalRevision | str] = {}
        # Chains as of their last successful append here; valid while their
        # version equals the projection's revision count for the artifact.
        self._chains: dict[ArtifactCoordinate, JournalChain] = {}

    @property
    def view(self) -> JournalWorldview:
        """The latest published worldview."""
        return self._projection.view

    def close(self) -> None:
        """Release the log's connections (once appends in flight are published); the
        published view stays readable."""
        with self._lock:
            self._landed.wait_for(lambda: not self._in_flight)
            self._log.close()

    def catch_up(self) -> JournalWorldview:
        """Bring the projection up to the end of the log, checking the digest index too.

        Raises :class:`JournalIntegrityError` (one line) for a log that
        contradicts itself, its digest claims or its persisted projection; the
        message ends by naming the command that checks the whole store.
        """
        with self._lock:
            try:
                if self._persisted is None:
                    view = catch_up(self._projection, self._reader)
                else:
                    view = self._persisted.catch_up()
                return check_digest_index(
                    view,
                    self._log.digest_claims(),
                    lambda: catch_up(self._projection, self._reader),
                )
            except JournalIntegrityError as error:
                if not self._log.location.is_durable:
                    raise
                audit = f"nenjim journal audit --store {self._log.location.display}"
                raise type(error)(f"{error.detail} (to check the whole store: {audit})") from error

    def follow(self) -> JournalWorldview:
        """Fold what other processes appended to the log since the view (no index check)."""
        with self._lock:
            return catch_up(self._projection, self._reader)

    def claim(self) -> None:
        """Record the store as this Journal's, once (see ``JournalLog.claim``)."""
        self._log.claim()

    def persist(self) -> None:
        """Write the view back to the store's persisted copy, if there is one."""
        with self._lock:
            if self._persisted is not None:
                self._persisted.persist()

    def ingest_text(self, text: str) -> tuple[JournalRevision, bool]:
        """Parse and ingest one complete text; ``(revision, newly accepted?)``."""
        return self.ingest(parse_journal(text))

    def ingest(
        self, revision: JournalRevision, source: Path | str | None = None
    ) -> tuple[JournalRevision, bool]:
        """Ingest one parsed revision atomically; ``(revision, newly accepted?)``.

        ``source`` is the file the text came from, named by any error.
        """
        is_new = bool(self.ingest_all([revision], [source]))
        chain = self.view.chain(revision.coordinate)
        stored = None if chain is None else chain.exact(revision.version)
        # Hand out the projection's immutable instance, so repeats return the same object.
        return stored or revision, is_new

    def ingest_all(
        self, revisions: Sequence[JournalRevision], sources: Sequence[Path | str | None] = ()
    ) -> list[JournalRevision]:
        """Ingest revisions in order, all in one transaction or none; returns the new ones.

        ``sources`` optionally gives, position by position, the file of each revision.
        """

        def source(index: int, revision: JournalRevision) -> Path | str | None:
            return sources[index] if index < len(sources) else None

        single = revisions[0].coordinate if len(revisions) == 1 else None
        return self._ingest(lambda attempt: revisions, source, keep=True, single=single).accepted

    def ingest_start(
        self, candidates: Iterable[JournalRevision], locate: Callable[[JournalRevision], str]
    ) -> int:
        """Ingest a start's parsed files, in order, in one transaction or none; how many
        were new. ``locate`` gives the file of a revision, named by any error.

        ``candidates`` is read one at a time and each parse is dropped once
        decided (a chain keeps its head's parse only while its artifact is being
        decided), so the start holds the texts, not every parse tree. An error
        raised by ``candidates`` (a file that cannot be parsed) is final. A
        decision taken again (another writer moved a chain first) reads the rest
        of ``candidates``, then parses the texts again.
        """
        texts: list[str] = []
        remaining = iter(candidates)
        failed: list[Exception] = []

        def take() -> Iterator[JournalRevision]:
            while True:
                try:
                    candidate = next(remaining, None)
                except Exception as error:
                    failed.append(error)  # not to be decided again: the next attempt raises it
                    raise
                if candidate is None:
                    return
                texts.append(candidate.text)
                yield candidate

        def revisions(attempt: int) -> Iterator[JournalRevision]:
            if attempt == 0:
                yield from take()
                return
            if failed:
                raise failed[0]
            for _ in take():  # what the first attempt did not reach
                pass
            yield from (parse_journal(text) for text in texts)

        decision = self._ingest(revisions, lambda index, revision: locate(revision), keep=False)
        # The decided chains hold their heads' parse: restore them from the view when needed.
        self._chains.clear()
        return len(decision.known)

    def _ingest(
        self,
        revisions: Callable[[int], Iterable[JournalRevision]],
        source: _Source,
        *,
        keep: bool,
        single: ArtifactCoordinate | None = None,
    ) -> _Decision:
        """Decide ``revisions(attempt)`` and append them in one transaction; what was
        decided (with ``keep``, the new revisions themselves, else only their texts).

        ``single``: the one artifact of a one-revision ingestion, appended outside
        the lock; otherwise the lock is held from the decision to the publish.
        """
        for attempt in range(_MAX_ATTEMPTS):
            # Decisions use the projection's view of the log. If another writer
            # moved a chain since, the append conflicts on the stream version and
            # the next attempt decides again on a caught-up view; a rejection is
            # only final when judged on a caught-up view.
            caught_up = attempt > 0
            with self._lock:
                self._landed.wait_for(
                    lambda: single not in self._in_flight if single else not self._in_flight
                )
                if caught_up:
                    catch_up(self._projection, self._reader, self._known_in_flight)
                decision = _Decision(keep)
                try:
                    events = self._decide(revisions(attempt), source, decision)
                    if single is None:
                        ids = self._log.append_events(events) if events else []
                        self._publish(ids, events, decision.known)
                        return decision
                except BaseException as error:
                    if self._decide_again(error, decision, caught_up):
                        continue
                    raise
                self._in_flight.add(single)
                self._known_in_flight.update(decision.known)
            try:
                ids = self._log.append_events(events) if events else []
            except BaseException as error:
                with self._lock:
                    self._land(single, decision)
                    if self._decide_again(error, decision, caught_up):
                        continue
                raise
            with self._lock:
                try:
                    self._publish(ids, events, self._known_in_flight)
                finally:
                    self._land(single, decision)
            return decision
        raise JournalConflictError(
            f"lost the race for a chain head {_MAX_ATTEMPTS} times in a row; nothing was appended"
        )

    def _decide_again(self, error: BaseException, decision: _Decision, caught_up: bool) -> bool:
        """After ``error`` (nothing appended): whether to decide again on a caught-up view;
        raises the Journal's error for a digest another artifact took."""
        for coordinate in decision.touched:  # decided-on chains may hold events
            self._chains.pop(coordinate, None)
        if isinstance(error, ClaimConflictError):
            raise JournalChainError(
                ChainViolation.DIGEST_TAKEN,
                f"{error.claim.key} is owned by {error.holder}",
                artifact=error.claim.owner,
            ) from error
        if isinstance(error, IntegrityError):
            return True  # another writer moved a head first: decide again
        return isinstance(error, JournalError) and not caught_up

    def _land(self, coordinate: ArtifactCoordinate, decision: _Decision) -> None:
        """An append outside the lock has ended (published, or failed)."""
        self._in_flight.discard(coordinate)
        for digest in decision.known:
            self._known_in_flight.pop(digest, None)
        self._landed.notify_all()

    def _decide(
        self,
        revisions: Iterable[JournalRevision],
        source: _Source,
        decision: _Decision,
    ) -> list[ChainEvent]:
        """Decide ``revisions`` in order; the new events, chain by chain (in the order the
        chains are first reached).

        Only the chain of the artifact being decided is held: revisions come
        artifact by artifact, and a chain left (its head holds a parse) is
        dropped with its events kept, to be rebuilt from them if its artifact
        comes back.
        """
        decided: dict[ArtifactCoordinate, list[ChainEvent]] = {}
        batch_owners: dict[str, ArtifactCoordinate] = {}

        def owner(digest: Sha256Digest) -> ArtifactCoordinate | None:
            return batch_owners.get(str(digest)) or self._log.digest_owner(digest)

        current: ArtifactCoordinate | None = None
        chain: JournalChain | None = None
        for index, revision in enumerate(revisions):
            coordinate = revision.coordinate
            if coordinate != current:
                if current is not None:
                    self._leave(current, chain, decided)
                current, chain = coordinate, self._resume(coordinate, decided)
                decision.touched.add(coordinate)
            try:
                chain, is_new = accept_revision(chain, revision, owner)
            except JournalError as error:
                error.locate(
                    artifact=str(coordinate),
                    path=source(index, revision),
                )
                raise
            if is_new:
                batch_owners[str(revision.digest)] = coordinate  # the text the event keeps
                decision.add(revision)
        if current is not None and chain is not None:
            decided.setdefault(current, []).extend(chain.collect_events())
        return [event for events in decided.values() for event in events]

    def _leave(
        self,
        coordinate: ArtifactCoordinate,
        chain: JournalChain | None,
        decided: dict[ArtifactCoordinate, list[ChainEvent]],
    ) -> None:
        """Keep the new events of a chain no longer decided on, and drop the chain."""
        events = decided.setdefault(coordinate, [])
        if chain is not None:
            events.extend(chain.collect_events())
        self._chains.pop(coordinate, None)

    def _resume(
        self, coordinate: ArtifactCoordinate, decided: dict[ArtifactCoordinate, list[ChainEvent]]
    ) -> JournalChain | None:
        """The artifact's chain at the projection's head, plus the events this attempt
        decided for it (when it comes back)."""
        chain = self._current_chain(coordinate)
        for event in decided.get(coordinate, ()):
            chain = event.mutate(chain)
        return chain

    def _current_chain(self, coordinate: ArtifactCoordinate) -> JournalChain | None:
        """The artifact's chain at the projection's head, without replaying the log."""
        snapshot = self._projection.view.chain(coordinate)
        if snapshot is None:
            return None
        cached = self._chains.get(coordinate)
        if cached is not None and cached.version == len(snapshot.stored):
            return cached
        chain = self._chains[coordinate] = JournalChain.restore(
            snapshot.latest, [(s.version_key, s.digest) for s in snapshot.stored]
        )
        return chain

    def _publish(self, ids: list[int], events: list[ChainEvent], known: KnownTexts) -> None:
        """Fold the appended events into the projection.

        When the log gave them the positions right after the view's, they are
        the log's next events and are applied as they are; otherwise another
        writer interleaved and the projection reads the log up to them (from
        memory, when this process's other writers committed what lies between),
        starting from the newest view another ingestion of this process published
        up to them. Either way the view is then offered to those ingestions.
        """
        start = self._projection.view.position
        if ids == list(range(start + 1, start + 1 + len(ids))):
            self._projection.apply(zip(ids, events, strict=True), known)
        else:
            catch_up(self._projection, self._reader, known, through=ids[-1], shared=True)
        share(self._projection, self._reader)


class _Decision:
    """What one attempt decided: the artifacts it reached and the new revisions.

    With ``keep``, the new revisions themselves, in order and by digest; without,
    only their texts by digest, so that no parse outlives its decision.
    """

    def __init__(self, keep: bool) -> None:
        self.touched: set[ArtifactCoordinate] = set()
        self.accepted: list[JournalRevision] = []
        self.known: dict[str, JournalRevision | str] = {}
        self._keep = keep

    def add(self, revision: JournalRevision) -> None:
        """Record one newly accepted revision."""
        if self._keep:
            self.accepted.append(revision)
            self.known[str(revision.digest)] = revision
        else:
            self.known[str(revision.digest)] = revision.text
