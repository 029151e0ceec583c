"""What one Journal serves: its lifecycle state and its latest worldview.

Two views of one shared board, so that the read-only boundary holds by
construction. The process holds a :class:`ServedJournal`: it moves the
lifecycle and reads the published worldview, and can do nothing else. The
manager's side holds a :class:`JournalPublisher`: it publishes new
worldviews and asks whether the Journal runs. Neither view leads to the
other, to the ingestion or to the store.

Stopping the process releases the store without the process holding it: the
store's closer is registered here under a key, and the process holds only a
``weakref.finalize`` that runs it once, at ``stop()`` or when the process is
garbage-collected, whichever comes first.
"""

from __future__ import annotations

import enum
import functools
import itertools
import threading
import weakref
from collections.abc import Callable

from nenjim.domain.journal.errors import LifecycleError
from nenjim.projections.journal_chains import JournalWorldview


class JournalState(enum.Enum):
    """Where a Journal is in its single-use lifecycle."""

    NEW = "not started"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed to start"
    STOPPED = "stopped"


# Read once: a member looked up on its enum class costs as much as the rest of view().
_RUNNING = JournalState.RUNNING


class _Board:
    """The shared state: written by the two views under the lock, read lock-free."""

    __slots__ = ("lock", "state", "view")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = JournalState.NEW
        self.view = JournalWorldview.empty()


_STORE_CLOSERS: dict[int, Callable[[], None]] = {}
_KEYS = itertools.count()


def _close_store(key: int) -> None:
    closer = _STORE_CLOSERS.pop(key, None)
    if closer is not None:
        closer()


def _retire(board: _Board, close: Callable[[], None]) -> None:
    """Mark the Journal stopped (the manager's refresh then fails), then close its store."""
    with board.lock:
        board.state = JournalState.STOPPED
    close()


class ServedJournal:
    """The process's view: lifecycle moves and the published worldview; it cannot publish."""

    __slots__ = ("__weakref__", "_board", "_release")

    def __init__(self, board: _Board, key: int) -> None:
        self._board = board
        self._release = weakref.finalize(self, _close_store, key)

    def begin_start(self) -> None:
        """NEW becomes STARTING; any other state raises ``LifecycleError``."""
        with self._board.lock:
            if self._board.state is not JournalState.NEW:
                raise LifecycleError(
                    f"start() is single-use; the Journal is {self._board.state.value}"
                )
            self._board.state = JournalState.STARTING

    def finish_start(self, *, succeeded: bool) -> None:
        """STARTING becomes RUNNING or FAILED (a concurrent ``stop()`` wins)."""
        with self._board.lock:
            if self._board.state is JournalState.STARTING:
                self._board.state = JournalState.RUNNING if succeeded else JournalState.FAILED

    def stop(self) -> None:
        """STOPPED, and the store released; idempotent."""
        with self._board.lock:
            self._board.state = JournalState.STOPPED
        self._release()

    def view(self) -> JournalWorldview:
        """The latest published worldview; ``LifecycleError`` unless the Journal runs."""
        board = self._board
        if board.state is not _RUNNING:
            raise LifecycleError(f"the Journal is {board.state.value}; queries need a started one")
        return board.view


class JournalPublisher:
    """The manager side's view: publishes worldviews and checks the lifecycle."""

    __slots__ = ("_board",)

    def __init__(self, board: _Board) -> None:
        self._board = board

    def publish(self, view: JournalWorldview) -> None:
        """Serve ``view`` from now on, unless a later one is already served."""
        with self._board.lock:
            if view.position >= self._board.view.position:
                self._board.view = view

    def require_running(self, action: str) -> None:
        """Raise ``LifecycleError`` unless the Journal started successfully and runs."""
        state = self._board.state
        if state is not JournalState.RUNNING:
            raise LifecycleError(f"{action} needs a started Journal; it is {state.value}")


def open_publication(close_store: Callable[[], None]) -> tuple[ServedJournal, JournalPublisher]:
    """A new board in state NEW, its two views, and ``close_store`` run once on stop."""
    board = _Board()
    key = next(_KEYS)
    _STORE_CLOSERS[key] = functools.partial(_retire, board, close_store)
    return ServedJournal(board, key), JournalPublisher(board)
