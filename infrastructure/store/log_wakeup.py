"""Waiting for a log to grow: woken by ``NOTIFY`` on PostgreSQL, else by a poll interval.

A follower reads by position, so a wake-up only says "look again": a
spurious one costs a query, a missed one at most ``interval`` seconds. The
PostgreSQL append notifies the log's channel in its own transaction, so the
notification arrives once the events are committed and readable.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from nenjim.infrastructure.store.urls import POSTGRES_CONNINFO

if TYPE_CHECKING:
    from nenjim.infrastructure.log.application import LogApplication


class AppendWaker:
    """Blocks in :meth:`wait` until the log may have grown, or ``interval`` seconds pass."""

    def __init__(self, application: LogApplication, interval: float) -> None:
        self._interval = interval
        self._stopped = threading.Event()
        self._listener: Any = None
        if application.location.kind == "postgresql":
            import psycopg  # noqa: PLC0415 - the postgres extra
            from psycopg.sql import SQL, Identifier  # noqa: PLC0415

            channel = getattr(application.recorder, "channel_name", None)
            if isinstance(channel, str):
                listener = psycopg.connect(application.location.env[POSTGRES_CONNINFO])
                listener.autocommit = True
                listener.execute(SQL("LISTEN {}").format(Identifier(channel)))
                self._listener = listener

    def wait(self) -> None:
        """Return when the log was appended to, or after the interval (at once once
        :meth:`stop` was called; a PostgreSQL waiter notices the stop within the interval)."""
        if self._listener is None or self._stopped.is_set():
            self._stopped.wait(self._interval)
            return
        for _ in self._listener.notifies(timeout=self._interval, stop_after=1):
            break

    def stop(self) -> None:
        """Make every later :meth:`wait` return at once (from any thread)."""
        self._stopped.set()

    def close(self) -> None:
        """Release the listening connection; from the thread that waits (idempotent)."""
        self._stopped.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
