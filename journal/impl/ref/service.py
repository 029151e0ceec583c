"""The reference Journal: one object that is both the read-only service and the process."""

from __future__ import annotations

import enum
import heapq
import threading
from collections import defaultdict
from pathlib import Path

from domain.journal.document import JournalRevision, Release
from domain.journal.errors import LifecycleError
from domain.journal.values import ArtifactCoordinate, JournalVersion, ReleaseVersion
from journal import JournalService
from journal.component import NenjimProcess
from journal.impl.ref.filesystem import JournalFile, scan_root
from journal.impl.ref.ingestion import JournalIngestion
from journal.model import RefreshReport
from projections.journal_chains import JournalWorldview


class _State(enum.Enum):
    NEW = "not started"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed to start"
    STOPPED = "stopped"


class ReferenceJournal(JournalService, NenjimProcess):
    """Loads its root once on ``start()`` and answers queries from the published view."""

    def __init__(self, root: Path, ingestion: JournalIngestion) -> None:
        self._root = root
        self._ingestion = ingestion
        self._state = _State.NEW
        self._lifecycle = threading.Lock()

    def start(self) -> None:
        """Load the whole root and publish it; single use, even after a failure."""
        with self._lifecycle:
            if self._state is not _State.NEW:
                raise LifecycleError(f"start() is single-use; the Journal is {self._state.value}")
            self._state = _State.STARTING
        try:
            self._ingestion.catch_up()
            new = in_link_order(_parse_new(scan_root(self._root), self._ingestion.view))
            self._ingestion.ingest_all([r for _, r in new], [f.path for f, _ in new])
        except BaseException:
            self._state = _State.FAILED
            raise
        self._state = _State.RUNNING

    def stop(self) -> None:
        """Stop answering queries and release the store; idempotent."""
        with self._lifecycle:
            if self._state is _State.STOPPED:
                return
            self._state = _State.STOPPED
        self._ingestion.close()

    def _refresh(self) -> RefreshReport:
        if self._state is not _State.RUNNING:
            raise LifecycleError(f"refresh needs a started Journal; it is {self._state.value}")
        files = scan_root(self._root)
        accepted = []
        for file, revision in in_link_order(_parse_new(files, self._ingestion.view)):
            stored, is_new = self._ingestion.ingest(revision, file.path)
            if is_new:
                accepted.append(stored)
        return RefreshReport(tuple(accepted))

    def _view(self) -> JournalWorldview:
        if self._state is not _State.RUNNING:
            raise LifecycleError(f"the Journal is {self._state.value}; queries need a started one")
        return self._ingestion.view

    def coordinates(self) -> frozenset[ArtifactCoordinate]:
        return frozenset(self._view().chains)

    def revisions(self, coordinate: ArtifactCoordinate | str) -> tuple[JournalRevision, ...]:
        chain = self._view().chain(ArtifactCoordinate.of(coordinate))
        return () if chain is None else chain.revisions

    def latest(self, coordinate: ArtifactCoordinate | str) -> JournalRevision | None:
        chain = self._view().chain(ArtifactCoordinate.of(coordinate))
        return None if chain is None else chain.latest

    def revision(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        view = self._view()
        chain = view.chain(ArtifactCoordinate.of(coordinate))
        return None if chain is None else chain.exact(JournalVersion.of(version))

    def as_of(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        chain = self._view().chain(ArtifactCoordinate.of(coordinate))
        return None if chain is None else chain.as_of(JournalVersion.of(version))

    def release(
        self,
        coordinate: ArtifactCoordinate | str,
        version: JournalVersion | str,
        release_version: ReleaseVersion | str,
    ) -> Release | None:
        wanted = ReleaseVersion.of(release_version)
        revision = self.revision(coordinate, version)
        return None if revision is None else revision.release(wanted)


def _parse_new(
    files: list[JournalFile], view: JournalWorldview
) -> list[tuple[JournalFile, JournalRevision]]:
    """Parse the files whose exact bytes are not already accepted at their version."""
    revisions = []
    for file in files:
        chain = view.chain(file.coordinate)
        known = None if chain is None else chain.digest_at(file.version)
        if known != str(file.digest):
            revisions.append((file, file.parse()))
    return revisions


def in_link_order(
    candidates: list[tuple[JournalFile, JournalRevision]],
) -> list[tuple[JournalFile, JournalRevision]]:
    """``candidates`` (in artifact and version order) with each one after the one it cites.

    A file citing another new file is judged after it, as it would be had the
    cited file been accepted first, so the initial load and a refresh report
    the same rule whatever order the names sort in. Files that cannot extend
    what they cite (not later than it) are judged after those that can, as
    against a root where every other file was accepted. Valid chains keep
    their chronological order: a successor is later than its predecessor.
    """
    position = {str(revision.digest): i for i, (_, revision) in enumerate(candidates)}
    followers: dict[int, list[tuple[bool, int]]] = defaultdict(list)
    ready: list[tuple[bool, int]] = []
    for i, (_, revision) in enumerate(candidates):
        cited = None if revision.predecessor is None else position.get(str(revision.predecessor))
        if cited is None:
            ready.append((False, i))
        else:
            stale = revision.version <= candidates[cited][1].version
            followers[cited].append((stale, i))
    # Digests are unique and a text cannot cite its own digest: the links form a forest.
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, i = heapq.heappop(ready)
        ordered.append(candidates[i])
        for follower in followers.pop(i, ()):
            heapq.heappush(ready, follower)
    return ordered


class JournalAdministration:
    """The non-public administration view of one Journal; only its manager holds it."""

    def __init__(self, journal: ReferenceJournal) -> None:
        self._journal = journal

    def refresh(self) -> RefreshReport:
        """Refresh the bound Journal from its root."""
        return self._journal._refresh()
