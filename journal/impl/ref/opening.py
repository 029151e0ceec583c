"""The store of one Journal, opened once and closed once (not public).

A Journal built over an existing root opens its store at once, so that a
store holding another Journal is refused before anything is read; one built
over a root that does not exist yet opens it at ``start()``, once the root is
there, so that a mistyped root creates no store. ``stop()`` closes the
store; a store opened after it would never be closed, so opening is then
refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from nenjim.domain.journal.errors import LifecycleError
from nenjim.journal.impl.ref.ingestion import JournalIngestion


class IngestionHandle:
    """The ingestion of one Journal's store: opened on first use, closed once.

    ``where`` names the store in messages.
    """

    def __init__(self, open_ingestion: Callable[[], JournalIngestion], where: str) -> None:
        self.where = where
        self._open_ingestion = open_ingestion
        self._ingestion: JournalIngestion | None = None
        self._closed = False
        self._lock = threading.Lock()

    def open(self) -> JournalIngestion:
        """The ingestion, opening the store the first time; ``LifecycleError`` after
        :meth:`close`."""
        with self._lock:
            if self._closed:
                raise LifecycleError("the Journal is stopped; its store stays closed")
            if self._ingestion is None:
                self._ingestion = self._open_ingestion()
            return self._ingestion

    def close(self) -> None:
        """Close the store if it was opened, and refuse to open it from now on; idempotent."""
        with self._lock:
            self._closed = True
            ingestion, self._ingestion = self._ingestion, None
        if ingestion is not None:
            ingestion.close()
