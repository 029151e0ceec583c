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

import threading
from collections.abc import Callable

from infrastructure.log import LogClosedError, LogReader
from infrastructure.log.projection_store import projection_recorder
from infrastructure.log.wakeup import AppendWaker
from journal.impl.ref.log import JournalLog
from projections.journal_chain_table import PersistedChains
from projections.journal_chains import JournalChainsProjection, JournalWorldview


class JournalFollower:
    """Follows the Journal log of an existing store (``StoreUnavailableError`` otherwise).

    :meth:`poll` catches up once; :meth:`follow` polls until :meth:`close`,
    handing each new view to a callback. Views are immutable: a reader
    holding one never sees it change. Close the follower when done.
    """

    def __init__(self, store: str, *, identity: str | None = None, interval: float = 1.0) -> None:
        self._log = JournalLog(store, create=False, identity=identity)
        self._lock = threading.Lock()
        self._chains = PersistedChains(
            JournalChainsProjection(), LogReader(self._log), projection_recorder(self._log)
        )
        self._interval = interval
        self._waker: AppendWaker | None = None
        self._closed = threading.Event()

    @property
    def view(self) -> JournalWorldview:
        """The latest view (empty before the first :meth:`poll`)."""
        return self._chains.view

    def poll(self) -> JournalWorldview:
        """Fold what the log holds after the view, write it back; the new view."""
        with self._lock:
            return self._chains.catch_up()

    def follow(self, on_view: Callable[[JournalWorldview], None]) -> None:
        """Poll until :meth:`close`, calling ``on_view`` with each view that moved."""
        waker = self._waker = AppendWaker(self._log, self._interval)
        try:
            shown = -1
            while not self._closed.is_set():
                try:
                    view = self.poll()
                except LogClosedError:
                    if self._closed.is_set():
                        return  # close() ran between the check and the poll
                    raise
                if view.position != shown:
                    shown = view.position
                    on_view(view)
                waker.wait()
        finally:
            waker.close()

    def close(self) -> None:
        """Stop following and release the store. Views handed out keep the revisions they
        already read; a revision not yet read needs the store (``LogClosedError``)."""
        self._closed.set()
        if self._waker is not None:
            self._waker.stop()
        with self._lock:
            self._log.close()
