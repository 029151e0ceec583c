"""``JournalFollower``: a long-running reader's view of a Journal log, following it.

A service's Journal is passive: its view changes only when its manager
refreshes. A reader that must see what other processes append (a server)
follows the log instead: it loads the chain projection the store keeps,
then folds every event after its position, again and again, and writes the
rows back. Polling by position never skips an event: the Journal log's ids
are gap-free and committed in id order on every store (SQLite has one
writer; the PostgreSQL append numbers events under an exclusive table lock
held until its commit), so an id not yet visible is higher than every
visible one. On PostgreSQL the wait between polls is cut short by the
``NOTIFY`` each append sends.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from nenjim.infrastructure.log import LogClosedError, LogReader, resolve_store_url
from nenjim.infrastructure.tracking import follow as follower
from nenjim.infrastructure.tracking.projections import projection_recorder
from nenjim.journal import JournalService
from nenjim.journal.impl.ref.chain_table import PersistedChains
from nenjim.journal.impl.ref.log import JournalLog, name_identity, root_identity
from nenjim.journal.impl.ref.service import WorldviewQueries
from nenjim.journal.impl.ref.store_errors import store_errors
from nenjim.projections.journal_chains import JournalChainsProjection, JournalWorldview

P = ParamSpec("P")
R = TypeVar("R")


class JournalFollower:
    """Follows the Journal log of an existing store.

    ``journal`` (a Journal name) or ``root`` (a root path, as given to
    ``build_journal``) checks that the store holds that Journal; with
    neither, any Journal's store is followed. :meth:`poll` catches up once;
    :meth:`follow` polls until :meth:`close`, handing each new view to a
    callback. A view is a ``JournalService`` over the log as one poll left it:
    it answers at once and never changes. Every store failure (missing,
    unreachable, holding another Journal, closed) raises
    ``nenjim.journal.exception.JournalStoreError``. Close the follower when done.
    """

    def __init__(
        self,
        store: str,
        *,
        journal: str | None = None,
        root: str | os.PathLike[str] | None = None,
        interval: float = 1.0,
    ) -> None:
        if journal is not None and root is not None:
            raise TypeError("JournalFollower takes journal= or root=, not both")
        if journal is not None:
            identity: str | None = name_identity(journal)
        elif root is not None:
            identity = root_identity(os.path.realpath(os.path.abspath(os.fspath(root))))
        else:
            identity = None
        with store_errors("the store URL"):
            self._where = resolve_store_url(store).where
        with store_errors(self._where):
            self._log = JournalLog(store, create=False, identity=identity)
        self._lock = threading.Lock()
        self._chains = PersistedChains(
            JournalChainsProjection(),
            LogReader(self._log),
            projection_recorder(self._log),
            read_only=self._log.read_only,
        )
        self._interval = interval
        self._closed = threading.Event()
        self._view = FollowedView(self._chains.view, self._where)

    @property
    def view(self) -> JournalService:
        """The latest view (empty before the first :meth:`poll`)."""
        return self._view

    def poll(self) -> JournalService:
        """Fold what the log holds after the view, write it back; the new view."""
        with store_errors(self._where):
            return self._poll()

    def follow(self, on_view: Callable[[JournalService], None]) -> None:
        """Poll until :meth:`close`, calling ``on_view`` with each view that moved."""
        with store_errors(self._where):
            wakeup = follower.wakeup_for(self._log, self._closed)
            try:
                polls = _Polls(self._poll, self._closed, on_view)
                follower.follow(polls, wakeup, self._closed, poll_interval=self._interval)
            finally:
                wakeup.close()

    def close(self) -> None:
        """Stop following and release the store. Views handed out keep the revisions they
        already read; one that must still read a revision's text raises
        ``JournalStoreError``."""
        self._closed.set()
        with self._lock:
            self._log.close()

    def _poll(self) -> FollowedView:
        with self._lock:
            worldview = self._chains.catch_up()
            if worldview.position != self._view.log_position:
                self._view = FollowedView(worldview, self._where)
            return self._view


class _Polls:
    """A follower as the follow loop drives it: each catch-up polls, and hands a view that
    moved to ``on_view``. Nothing is ever pending: the Journal log's ids commit in order."""

    def __init__(
        self,
        poll: Callable[[], FollowedView],
        closed: threading.Event,
        on_view: Callable[[JournalService], None],
    ) -> None:
        self._poll = poll
        self._closed = closed
        self._on_view = on_view
        self._shown = -1

    def catch_up(self) -> int:
        try:
            view = self._poll()
        except LogClosedError:
            if self._closed.is_set():
                return 0  # close() ran between the loop's check and the poll
            raise
        moved = view.log_position - max(self._shown, 0)
        if view.log_position != self._shown:
            self._shown = view.log_position
            self._on_view(view)
        return moved

    def pending(self) -> bool:
        """Never: a Journal log's events are read as soon as they commit."""
        return False


def _guarded(
    query: Callable[Concatenate[WorldviewQueries, P], R],
) -> Callable[Concatenate[FollowedView, P], R]:
    """``query``, raising a store failure as ``JournalStoreError`` (naming the view's store)."""

    def guarded(view: FollowedView, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with store_errors(view._where):
            return query(view, *args, **kwargs)

    return guarded


class FollowedView(WorldviewQueries):
    """The ``JournalService`` of one worldview a follower read: it always answers.

    A revision read from a persisted row reads its text from the log when first
    asked; a store failure then (the follower closed) is a ``JournalStoreError``.
    """

    def __init__(self, worldview: JournalWorldview, where: str) -> None:
        self._worldview = worldview
        self._where = where
        # The log position the view reflects: the follower's, not the service's.
        self.log_position = worldview.position

    def _view(self) -> JournalWorldview:
        return self._worldview

    coordinates = _guarded(WorldviewQueries.coordinates)
    revisions = _guarded(WorldviewQueries.revisions)
    latest = _guarded(WorldviewQueries.latest)
    revision = _guarded(WorldviewQueries.revision)
    as_of = _guarded(WorldviewQueries.as_of)
    release = _guarded(WorldviewQueries.release)
