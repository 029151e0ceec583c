"""``Listening``: a follower's wake-up on PostgreSQL (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import psycopg
from psycopg.sql import SQL, Identifier

from nenjim.infrastructure.log.application import LogApplication
from nenjim.infrastructure.postgresql.storage import PostgresDriver
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.follow.schema import CHANNEL, listening_lock
from nenjim.infrastructure.store.urls import POSTGRES_CONNINFO

_SLICE = 0.25  # how often a wait looks at its stop event


def listening_for(log: LogApplication | Backend, stop: threading.Event) -> Listening:
    """The wake-up of a storage log (its schema's appends, which notify only while a
    follower holds their lock) or of a Journal log (its own channel)."""
    if isinstance(log, Backend):
        settings = cast(PostgresDriver, log.driver).settings
        lock = listening_lock(settings.schema)
        return Listening(settings.conninfo, CHANNEL, stop, payload=settings.schema, lock=lock)
    channel = cast(Any, log.recorder).channel_name
    return Listening(log.location.env[POSTGRES_CONNINFO], channel, stop)


class Listening:
    """A connection of its own that ``LISTEN``s on ``channel`` (for notifications carrying
    ``payload`` only, if given), holding the advisory ``lock`` shared, if given."""

    def __init__(
        self,
        conninfo: str,
        channel: str,
        stop: threading.Event,
        *,
        payload: str | None = None,
        lock: tuple[str, tuple[object, ...]] | None = None,
    ) -> None:
        self._payload = payload
        self._stop = stop
        self._connection: psycopg.Connection[Any] = psycopg.connect(conninfo, autocommit=True)
        self._connection.execute(SQL("LISTEN {}").format(Identifier(channel)))
        if lock is not None:
            # Writers notify only while a follower holds this lock (released with the
            # connection): held from here, before the follower's first read.
            key, params = lock
            self._connection.execute(f"SELECT pg_advisory_lock_shared({key})", params)

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for notice in self._connection.notifies(timeout=min(remaining, _SLICE)):
                if self._payload is None or notice.payload == self._payload:
                    return

    def close(self) -> None:
        self._connection.close()
