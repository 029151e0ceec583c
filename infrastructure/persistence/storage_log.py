"""``StorageLog``: a store's storage log as a projection reads it, whatever the store.

SQL stores are read through :mod:`nenjim.infrastructure.storage.follow.log`
(only final events, in log order); a ``memory:`` store's log is a list, its
position an index, and every event in it is final.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from nenjim.infrastructure.memory.storage import InMemoryDriver
from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.follow import log
from nenjim.infrastructure.storage.follow.log import LogPosition, StoredEvent
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session

_T = TypeVar("_T")


class StorageLog:
    """The storage log of ``backend``'s store, each call one read transaction."""

    def __init__(self, backend: Backend) -> None:
        driver = backend.driver
        self._memory = driver if isinstance(driver, InMemoryDriver) else None
        self._sql = driver if isinstance(driver, SqlDriver) else None

    def read_after(self, after: LogPosition, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` final events after ``after``, in log order."""
        if self._memory is not None:
            page = self._memory.log_after(after.notification_id, limit)
            return [StoredEvent(LogPosition(0, n), topic, state) for n, topic, state in page]
        return self._read(lambda session: log.read_after(session, after, limit))

    def pending_after(self, after: LogPosition) -> bool:
        """Whether any committed event lies after ``after``, final or not."""
        if self._memory is not None:
            return after.notification_id < self._memory.log_length()
        return self._read(lambda session: log.pending_after(session, after))

    def position_at(self, count: int) -> LogPosition:
        """The position after the first ``count`` events in log order."""
        if self._memory is not None:
            return LogPosition(0, count)
        return self._read(lambda session: log.position_at(session, count))

    def size(self) -> int:
        """How many events the log holds."""
        if self._memory is not None:
            return self._memory.log_length()
        return self._read(log.log_size)

    def commit_horizon(self) -> int:
        """See :func:`~nenjim.infrastructure.storage.follow.log.commit_horizon`."""
        return 0 if self._memory is not None else self._read(log.commit_horizon)

    def is_final(self, horizon: int) -> bool:
        """See :func:`~nenjim.infrastructure.storage.follow.log.is_final`."""
        return self._memory is not None or self._read(lambda s: log.is_final(s, horizon))

    def _read(self, query: Callable[[Session], _T]) -> _T:
        assert self._sql is not None  # a Backend's driver is in memory or SQL
        with self._sql.transaction(None) as session:
            return query(session)
