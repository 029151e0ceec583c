"""A closed log refuses every read and write with ``LogClosedError``, on every store kind.

Each claiming recorder mixes in :class:`ClosableRecorder` before its
``eventsourcing`` base: the library's read and write methods, and the
claims methods, first check that the log is open. ``LogApplication.close()``
closes the recorder before it releases the store's connections, so a call
that starts afterwards is refused at once. A call already past the check
when the store closes finishes normally (SQLite closes a busy connection
only when its thread returns it; psycopg's pool does the same) or, if it
asks for a connection after the close, is refused with the same error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    ApplicationRecorder,
    Notification,
    PersistenceError,
    StoredEvent,
    Subscription,
)

from nenjim.infrastructure.log.recent_commits import RecentCommits
from nenjim.infrastructure.store.errors import LogClosedError


class ClosableRecorder(ApplicationRecorder):
    """An application recorder that refuses all use once :meth:`close_log` is called.

    A mixin: it always precedes a concrete ``eventsourcing`` recorder in the
    method order, so its ``super()`` calls reach real methods (mypy sees only
    the abstract interface, hence the ``safe-super`` ignores).
    """

    _closed_as: str | None = None
    recent_commits: RecentCommits | None = None
    """The notifications this process committed last (recorders with a commit group)."""

    def close_log(self, where: str) -> None:
        """Refuse every later use, naming the store as ``where`` (idempotent)."""
        if self._closed_as is None:
            self._closed_as = where

    def require_open(self) -> None:
        """Raise ``LogClosedError`` if the log was closed."""
        if self._closed_as is not None:
            raise LogClosedError(f"{self._closed_as} used after close()")

    @contextmanager
    def while_open(self) -> Iterator[None]:
        """Run the block if the log is open; a store error caused by a close is reported as one.

        A call that passed the check as another thread closed the store gets
        the driver's "pool closed" error: the close is the cause to report.
        """
        self.require_open()
        try:
            yield
        except PersistenceError as error:
            if self._closed_as is not None:
                raise LogClosedError(f"{self._closed_as} used after close()") from error
            raise

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self.while_open():
            return super().insert_events(stored_events, **kwargs)  # type: ignore[safe-super]

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        with self.while_open():
            return super().select_events(  # type: ignore[safe-super]
                originator_id, gt=gt, lte=lte, desc=desc, limit=limit
            )

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        with self.while_open():
            return super().select_notifications(  # type: ignore[safe-super]
                start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )

    def max_notification_id(self) -> int | None:
        with self.while_open():
            return super().max_notification_id()  # type: ignore[safe-super]

    def subscribe(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> Subscription[ApplicationRecorder]:
        with self.while_open():
            return super().subscribe(gt, topics)  # type: ignore[safe-super]
