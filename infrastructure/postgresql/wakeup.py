"""``Listening``: a follower's wake-up on PostgreSQL (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from nenjim.infrastructure.postgresql.storage import PostgresDriver
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.follow.schema import CHANNEL, listening_lock

_SLICE = 0.25  # how often a wait looks at its stop event


class Listening:
    """A connection of its own that ``LISTEN``s for commits that append to this schema's log
    and holds the lock that makes writers notify them."""

    def __init__(self, backend: Backend, stop: threading.Event) -> None:
        driver = backend.driver
        assert isinstance(driver, PostgresDriver)  # wakeup_for chose this class by kind
        self._schema = driver.settings.schema
        self._stop = stop
        self._connection: psycopg.Connection[Any] = psycopg.connect(
            driver.settings.conninfo, autocommit=True
        )
        self._connection.execute(f"LISTEN {CHANNEL}")
        # Writers notify only while a follower holds this lock (released with the
        # connection): held from here, before the follower's first read.
        key, params = listening_lock(self._schema)
        self._connection.execute(f"SELECT pg_advisory_lock_shared({key})", params)

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for notice in self._connection.notifies(timeout=min(remaining, _SLICE)):
                if notice.payload == self._schema:
                    return

    def close(self) -> None:
        self._connection.close()
