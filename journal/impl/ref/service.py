"""The reference Journal: one object that is both the read-only service and the process."""

from __future__ import annotations

import enum
import threading
from pathlib import Path

from domain.journal.document import JournalRevision, Release
from domain.journal.errors import LifecycleError
from domain.journal.values import ArtifactCoordinate, JournalVersion, ReleaseVersion
from journal import JournalService
from journal.component import NenjimProcess
from journal.impl.ref.filesystem import JournalFile, scan_root
from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.progress import Progress, silent
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

    def __init__(
        self, root: Path, ingestion: JournalIngestion, *, progress: Progress | None = None
    ) -> None:
        self._root = root
        self._ingestion = ingestion
        self._progress = progress or silent
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
            new = _parse_new(scan_root(self._root), self._ingestion.view, self._progress)
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
        for file, revision in _parse_new(files, self._ingestion.view):
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
    files: list[JournalFile], view: JournalWorldview, progress: Progress = silent
) -> list[tuple[JournalFile, JournalRevision]]:
    """Parse the files whose exact bytes are not already accepted at their version."""
    revisions = []
    for done, file in enumerate(files):
        progress("reading revision files", done, len(files))
        chain = view.chain(file.coordinate)
        known = None if chain is None else chain.digest_at(file.version)
        if known != str(file.digest):
            revisions.append((file, file.parse()))
    progress("reading revision files", len(files), len(files))
    return revisions


class JournalAdministration:
    """The non-public administration view of one Journal; only its manager holds it."""

    def __init__(self, journal: ReferenceJournal) -> None:
        self._journal = journal

    def refresh(self) -> RefreshReport:
        """Refresh the bound Journal from its root."""
        return self._journal._refresh()
