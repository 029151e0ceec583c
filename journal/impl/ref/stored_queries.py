"""``StoredJournal``: the Journal's queries answered from its store, with bounded memory.

The in-memory Journal (``build_journal``) folds every revision into one
worldview in its process. This one holds none: it answers from the chain
projection the store keeps (see :mod:`nenjim.journal.impl.ref.stored_chains`),
through the table's index, and keeps a bounded cache of the chains it read.
Its start catches up only what the log holds after the table's tracked
position. It answers exactly as the in-memory one: the same queries, the
same order of checks, the same errors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from nenjim.domain.journal.document import JournalRevision, Release
from nenjim.domain.journal.errors import LifecycleError
from nenjim.domain.journal.values import ArtifactCoordinate, JournalVersion, ReleaseVersion
from nenjim.infrastructure.log import LogReader, resolve_store_url
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal import JournalService
from nenjim.journal.component import NenjimProcess
from nenjim.journal.impl.ref.log import JournalLog, name_identity, root_identity
from nenjim.journal.impl.ref.publication import JournalState
from nenjim.journal.impl.ref.revision_cache import DEFAULT_CACHE_SIZE
from nenjim.journal.impl.ref.store_errors import store_errors
from nenjim.journal.impl.ref.stored_chains import StoredChains
from nenjim.projections.journal_chains import ChainSnapshot

P = ParamSpec("P")
R = TypeVar("R")


def _guarded(
    query: Callable[Concatenate[StoredJournal, P], R],
) -> Callable[Concatenate[StoredJournal, P], R]:
    """``query``, raising a store failure as ``JournalStoreError`` naming the store."""

    def guarded(journal: StoredJournal, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with store_errors(journal.where):
            return query(journal, *args, **kwargs)

    guarded.__doc__ = query.__doc__
    return guarded


class StoredJournal(JournalService, NenjimProcess):
    """A Journal served from the existing store ``store``: memory bounded by ``cache_size``
    chains, whatever the number of revisions.

    ``journal`` (a Journal name) or ``root`` (a root path, as given to
    ``build_journal``) checks that the store holds that Journal; with
    neither, any Journal's store is served. ``start()`` opens the store and
    catches up what the log holds after the persisted chain projection; the
    answers then reflect the log as that left it, until :meth:`poll`
    catches up again. Every store failure is a ``JournalStoreError``; a log
    whose events or stored texts contradict their chain raise
    ``JournalIntegrityError`` naming the revision.
    """

    def __init__(
        self,
        store: str,
        *,
        journal: str | None = None,
        root: str | os.PathLike[str] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if journal is not None and root is not None:
            raise TypeError("StoredJournal takes journal= or root=, not both")
        if journal is not None:
            self._identity: str | None = name_identity(journal)
        elif root is not None:
            self._identity = root_identity(os.path.realpath(os.path.abspath(os.fspath(root))))
        else:
            self._identity = None
        with store_errors("the store URL"):
            self._location = resolve_store_url(store)
        self.where = self._location.where
        self._url = store
        self._cache_size = cache_size
        self._state = JournalState.NEW
        self._lock = threading.Lock()
        self._log: JournalLog | None = None
        self._chains: StoredChains | None = None

    def start(self) -> None:
        """Open the store and catch up with its log; single use, even after a failure."""
        with self._lock:
            if self._state is not JournalState.NEW:
                raise LifecycleError(f"start() is single-use; the Journal is {self._state.value}")
            self._state = JournalState.STARTING
        try:
            with store_errors(self.where):
                self._log = JournalLog(self._url, create=False, identity=self._identity)
                recorder = projection_recorder(self._log)
                chains = StoredChains(
                    LogReader(self._log),
                    recorder,
                    location=self._location,
                    cache_size=self._cache_size,
                    writable=not self._log.read_only,
                )
                chains.open()
        except BaseException:
            self._finish(JournalState.FAILED)
            raise
        self._chains = chains
        self._finish(JournalState.RUNNING)

    def stop(self) -> None:
        """Stop answering queries and close the store; idempotent."""
        with self._lock:
            self._state = JournalState.STOPPED
            log, self._log = self._log, None
        if log is not None:
            log.close()

    def poll(self) -> int:
        """Catch up with what the log holds now (revisions others appended); how many new
        events were read. ``LifecycleError`` unless the Journal runs."""
        with store_errors(self.where):
            return self._running().catch_up()

    @property
    def cached(self) -> int:
        """How many chains the cache holds now (at most ``cache_size``)."""
        chains = self._chains
        return 0 if chains is None else len(chains.cache)

    @property
    def position(self) -> int:
        """The log position the answers reflect."""
        return self._running().position

    @_guarded
    def coordinate_page(self, after: str | None, limit: int) -> list[str]:
        """At most ``limit`` coordinates' texts after ``after``, in code point order (a page
        of a long list, read through the index)."""
        return self._running().coordinate_names(after, limit)

    @_guarded
    def chain(self, coordinate: ArtifactCoordinate | str) -> ChainSnapshot | None:
        """The chain of ``coordinate``, checked as the queries check it, or ``None``."""
        return self._chain(self._running(), coordinate)

    @_guarded
    def coordinates(self) -> frozenset[ArtifactCoordinate]:
        names = self._running().coordinate_names()
        return frozenset(ArtifactCoordinate(name) for name in names)

    @_guarded
    def revisions(self, coordinate: ArtifactCoordinate | str) -> tuple[JournalRevision, ...]:
        chain = self._chain(self._running(), coordinate)
        return () if chain is None else chain.revisions

    @_guarded
    def latest(self, coordinate: ArtifactCoordinate | str) -> JournalRevision | None:
        chain = self._chain(self._running(), coordinate)
        return None if chain is None else chain.latest

    @_guarded
    def revision(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        chains = self._running()
        name = _name(chains, coordinate)
        exact = JournalVersion.of(version)
        chain = chains.chain(name)
        return None if chain is None else chain.exact(exact)

    @_guarded
    def as_of(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        chains = self._running()
        name = _name(chains, coordinate)
        key = JournalVersion.text_of(version)
        chain = chains.chain(name)
        return None if chain is None else chain.as_of_key(key)

    @_guarded
    def release(
        self,
        coordinate: ArtifactCoordinate | str,
        version: JournalVersion | str,
        release_version: ReleaseVersion | str,
    ) -> Release | None:
        chains = self._running()
        name = _name(chains, coordinate)
        exact = JournalVersion.of(version)
        wanted = ReleaseVersion.of(release_version)
        chain = chains.chain(name)
        revision = None if chain is None else chain.exact(exact)
        return None if revision is None else revision.release(wanted)

    def _running(self) -> StoredChains:
        """The chains; ``LifecycleError`` unless the Journal runs (checked first, as the
        in-memory Journal checks it, whatever the arguments)."""
        chains = self._chains
        if self._state is not JournalState.RUNNING or chains is None:
            raise LifecycleError(f"the Journal is {self._state.value}; queries need a started one")
        return chains

    def _chain(
        self, chains: StoredChains, coordinate: ArtifactCoordinate | str
    ) -> ChainSnapshot | None:
        return chains.chain(_name(chains, coordinate))

    def _finish(self, state: JournalState) -> None:
        """STARTING becomes ``state`` (a concurrent ``stop()`` wins, and closes the log)."""
        with self._lock:
            if self._state is JournalState.STARTING:
                self._state = state
                if state is JournalState.RUNNING:
                    return
            log, self._log = self._log, None
        if log is not None:
            log.close()


def _name(chains: StoredChains, coordinate: ArtifactCoordinate | str) -> str:
    """The coordinate text of ``coordinate``, checked (and raising) as
    ``ArtifactCoordinate.of`` checks it; a cached artifact's text builds no coordinate."""
    if type(coordinate) is str and coordinate in chains.cache:
        return coordinate
    return str(ArtifactCoordinate.of(coordinate))
