"""The reference Journal: one object that is both the read-only service and the process.

It holds what a consumer may reach and nothing more: the published worldview
(through a :class:`ServedJournal`) and, until ``start()``, a one-shot starter.
After ``start()`` (succeeded or failed) and after ``stop()``, no ingestion,
log, root or refresh is reachable from it.
"""

from __future__ import annotations

from collections.abc import Callable

from nenjim.domain.journal.document import JournalRevision, Release
from nenjim.domain.journal.errors import LifecycleError
from nenjim.domain.journal.values import ArtifactCoordinate, JournalVersion, ReleaseVersion
from nenjim.journal import JournalService
from nenjim.journal.component import NenjimProcess
from nenjim.journal.impl.ref.publication import ServedJournal
from nenjim.projections.collector import cyclic_collection_paused
from nenjim.projections.journal_chains import ChainSnapshot, JournalWorldview


class WorldviewQueries(JournalService):
    """The queries of ``JournalService`` over the worldview ``_view()`` gives.

    Every query takes the view before it looks at its arguments, so a Journal
    that does not run raises ``LifecycleError`` whatever it was asked; then it
    checks every argument, in order, also for an artifact it does not know.
    """

    _view: Callable[[], JournalWorldview]

    def coordinates(self) -> frozenset[ArtifactCoordinate]:
        return frozenset(self._view().chains)

    def revisions(self, coordinate: ArtifactCoordinate | str) -> tuple[JournalRevision, ...]:
        chain = _chain(self._view(), coordinate)
        return () if chain is None else chain.revisions

    def latest(self, coordinate: ArtifactCoordinate | str) -> JournalRevision | None:
        chain = _chain(self._view(), coordinate)
        return None if chain is None else chain.latest

    def revision(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        chain = _chain(self._view(), coordinate)
        exact = JournalVersion.of(version)
        return None if chain is None else chain.exact(exact)

    def as_of(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        chain = _chain(self._view(), coordinate)
        key = JournalVersion.text_of(version)
        return None if chain is None else chain.as_of_key(key)

    def release(
        self,
        coordinate: ArtifactCoordinate | str,
        version: JournalVersion | str,
        release_version: ReleaseVersion | str,
    ) -> Release | None:
        chain = _chain(self._view(), coordinate)
        exact = JournalVersion.of(version)
        wanted = ReleaseVersion.of(release_version)
        revision = None if chain is None else chain.exact(exact)
        return None if revision is None else revision.release(wanted)


class ReferenceJournal(WorldviewQueries, NenjimProcess):
    """Loads its root once on ``start()`` and answers queries from the published view."""

    def __init__(self, served: ServedJournal, starter: Callable[[], None]) -> None:
        self._served = served
        self._view = served.view
        self._starter: Callable[[], None] | None = starter

    def start(self) -> None:
        """Load the whole root and publish it; single use, even after a failure."""
        self._served.begin_start()
        starter, self._starter = self._starter, None
        try:
            if starter is None:  # a concurrent stop() dropped it
                raise LifecycleError("start() is single-use; the Journal is stopped")
            with cyclic_collection_paused():
                starter()
        except BaseException:
            self._served.finish_start(succeeded=False)
            raise
        self._served.finish_start(succeeded=True)

    def stop(self) -> None:
        """Stop answering queries and release the store; idempotent."""
        self._starter = None
        self._served.stop()


def _chain(view: JournalWorldview, coordinate: ArtifactCoordinate | str) -> ChainSnapshot | None:
    """The chain of ``coordinate`` in ``view``, or ``None``, as ``ArtifactCoordinate.of``
    would find it: a ``str`` naming a served artifact builds no coordinate (most queries
    pass text); any other is checked, and raises, as ``of`` checks it."""
    if type(coordinate) is str:
        chain = view.chain_named(coordinate)
        if chain is not None:
            return chain
    return view.chain(ArtifactCoordinate.of(coordinate))
