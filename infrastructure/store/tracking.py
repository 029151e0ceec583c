"""Tracked projections: rows and position committed together, generations swapped atomically.

``storage_projection_positions`` (created on demand beside ``storage_events``)
holds one row per generation of each projection: its log position and
whether it is the live one. A projection's rows live in a table of their
own per generation (``storage_projection_<slug>_<generation>``). Every step
of a follower reads the position, the events after it, writes the rows and
the new position in one transaction: a crash loses the whole step or none
of it, so a restart resumes exactly after the last committed event.

A rebuild fills a new generation beside the live one, in steps of its own,
then in one last transaction catches it up to the log, marks it live and
drops the old one: a reader, which reads the live generation's table in
one transaction, sees the old rows or the new ones, never a half-built
table. Followers of one projection serialise on the SQLite writer lock or
a PostgreSQL advisory lock held for each step.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.errors import UnsupportedBackendError
from nenjim.infrastructure.storage.follow.log import (
    START,
    LogPosition,
    StoredEvent,
    commit_horizon,
    is_final,
    read_after,
)
from nenjim.infrastructure.storage.follow.schema import qualified
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import RebuildLostError, RebuildTimeoutError

POSITIONS = "storage_projection_positions"
"""The table of every tracked projection's generations and positions."""

DEFAULT_BATCH = 1000
"""Events applied per transaction."""

DEFAULT_REBUILD_WAIT = 30.0
"""Seconds a rebuild waits for transactions older than the events it must cover."""

Progress = Callable[[str, int, int], None]
"""``progress(task, done, total)``."""

_SLUG = re.compile(r"[^a-z0-9]+")


class ProjectionTable(Protocol):
    """What a persisted projection supplies: its name, its table's DDL, how to apply events."""

    @property
    def name(self) -> str:
        """The projection's name (``agent-runs``)."""
        ...

    def create(self, session: Session, table: str) -> None:
        """Create the (empty) rows table ``table`` (schema-qualified)."""
        ...

    def apply(self, session: Session, table: str, events: Sequence[StoredEvent]) -> None:
        """Fold ``events`` (in log order) into the rows of ``table``."""
        ...


@immutable
@dataclass(frozen=True, slots=True)
class Generation:
    """One generation of a projection: its rows table and how far it has applied the log."""

    number: int
    live: bool
    position: LogPosition


def rows_table(session: Session, name: str, generation: int) -> str:
    """The schema-qualified rows table of generation ``generation`` of projection ``name``."""
    return qualified(session.dialect, table_stem(name) + f"_{generation}")


def table_stem(name: str) -> str:
    """``storage_projection_<slug>``; a hash keeps names that slug alike apart."""
    slug = _SLUG.sub("_", name.lower()).strip("_")[:32]
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:6]
    return f"storage_projection_{slug}_{digest}"


def ensure_positions(session: Session) -> None:
    """Create the positions table if it is missing (serialised on PostgreSQL)."""
    _serialise(session, POSITIONS)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {qualified(session.dialect, POSITIONS)} ("
        "name TEXT NOT NULL, generation INTEGER NOT NULL, live INTEGER NOT NULL, "
        "transaction_id BIGINT NOT NULL, notification_id BIGINT NOT NULL, "
        "PRIMARY KEY (name, generation))"
    )


def has_positions(session: Session) -> bool:
    """Whether the positions table exists (no projection was ever tracked otherwise)."""
    if session.dialect.dense_notification_ids:
        found = session.one(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (POSITIONS,)
        )
    else:
        found = session.one("SELECT to_regclass(?) IS NOT NULL", (_positions(session),))
        found = found if found is not None and found[0] else None
    return found is not None


def generations(session: Session, name: str) -> list[Generation]:
    """Every generation of ``name``, oldest first."""
    rows = session.all(
        f"SELECT generation, live, transaction_id, notification_id FROM {_positions(session)} "
        "WHERE name = ? ORDER BY generation",
        (name,),
    )
    return [Generation(int(g), bool(live), LogPosition(int(t), int(n))) for g, live, t, n in rows]


def live_generation(session: Session, name: str) -> Generation | None:
    """The live generation of ``name``, or ``None`` before its first step."""
    return next((g for g in generations(session, name) if g.live), None)


class TrackedProjection:
    """A :class:`ProjectionTable` kept in a SQL store beside the storage log."""

    def __init__(
        self, backend: Backend, projection: ProjectionTable, *, batch: int = DEFAULT_BATCH
    ) -> None:
        driver = backend.driver
        if not isinstance(driver, SqlDriver):
            raise UnsupportedBackendError(
                f"projection {projection.name!r} is persisted in SQL stores only"
            )
        self._driver = driver
        self.projection = projection
        self.batch = batch

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction holding the projection's lock (so its steps never interleave)."""
        with self._driver.transaction(None) as session:
            _serialise(session, self.projection.name)
            yield session

    def live(self, session: Session) -> Generation:
        """The live generation, created (at the start of the log) if there is none."""
        ensure_positions(session)
        existing = generations(session, self.projection.name)
        found = next((generation for generation in existing if generation.live), None)
        if found is None:
            number = max((generation.number for generation in existing), default=0) + 1
            found = self._new_generation(session, live=True, number=number)
        return found

    def step(self) -> int:
        """Apply the next batch of final events to the live generation; how many."""
        with self.transaction() as session:
            return self._advance(session, self.live(session))

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply every final event after the live position; how many in all."""
        done = 0
        while applied := self.step():
            done += applied
            if progress is not None:
                progress(f"catching up {self.projection.name}", done, done)
        return done

    def rebuild(
        self, progress: Progress | None = None, *, timeout: float = DEFAULT_REBUILD_WAIT
    ) -> int:
        """Build a new generation from the start of the log and swap it in; its event count.

        The new generation covers at least every event committed before the rebuild
        began. On PostgreSQL those are not all final while a transaction that started
        before them still runs (anywhere on the server): the rebuild waits for such
        transactions to end, at most ``timeout`` seconds, then raises
        ``RebuildTimeoutError`` and leaves the live generation as it was.
        """
        name = self.projection.name
        with self._driver.transaction(None) as session:
            horizon = commit_horizon(session)
        with self.transaction() as session:
            self.live(session)
            existing = generations(session, name)
            # Numbered before the stale ones are dropped: a number is never reused, so a
            # rebuild overtaken by this one finds its generation gone instead of ours.
            number = max(generation.number for generation in existing) + 1
            for stale in existing:
                if not stale.live:  # an earlier rebuild that did not finish, or still running
                    self._drop(session, stale)
            building = self._new_generation(session, live=False, number=number)
        total = self._log_size()
        done = 0
        while True:
            with self.transaction() as session:
                current = self._generation(session, building.number)
                applied = self._advance(session, current)
            if not applied:
                break
            done += applied
            if progress is not None:
                progress(f"rebuilding {name}", done, max(total, done))
        self._await_final(horizon, timeout, progress, done, total)
        with self.transaction() as session:
            while applied := self._advance(session, self._generation(session, building.number)):
                done += applied
            for old in generations(session, name):
                if old.live:
                    self._drop(session, old)
            session.execute(
                f"UPDATE {_positions(session)} SET live = 1 WHERE name = ? AND generation = ?",
                (name, building.number),
            )
        if progress is not None:
            progress(f"rebuilding {name}", done, done)
        return done

    def _await_final(
        self, horizon: int, timeout: float, progress: Progress | None, done: int, total: int
    ) -> None:
        """Wait until every event committed below ``horizon`` is final (see ``rebuild``)."""
        deadline = time.monotonic() + timeout
        pause = 0.002
        waiting = False
        while True:
            with self._driver.transaction(None) as session:
                if is_final(session, horizon):
                    return
            if not waiting and progress is not None:
                progress(
                    f"rebuilding {self.projection.name}: waiting for older transactions",
                    done,
                    max(total, done),
                )
            waiting = True
            if time.monotonic() > deadline:
                raise RebuildTimeoutError(
                    f"projection {self.projection.name!r}: events committed before the rebuild "
                    f"began are not final after {timeout:g} s: a transaction that started "
                    "before them still runs on the server; the live generation is unchanged"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _advance(self, session: Session, generation: Generation) -> int:
        events = read_after(session, generation.position, self.batch)
        if not events:
            return 0
        table = rows_table(session, self.projection.name, generation.number)
        self.projection.apply(session, table, events)
        last = events[-1].position
        session.execute(
            f"UPDATE {_positions(session)} SET transaction_id = ?, notification_id = ? "
            "WHERE name = ? AND generation = ?",
            (last.transaction, last.notification_id, self.projection.name, generation.number),
        )
        return len(events)

    def _generation(self, session: Session, number: int) -> Generation:
        for generation in generations(session, self.projection.name):
            if generation.number == number:
                return generation
        raise RebuildLostError(
            f"projection {self.projection.name!r}: generation {number} being rebuilt was "
            "dropped by another rebuild that started since; the live generation is unchanged"
        )

    def _new_generation(self, session: Session, *, live: bool, number: int) -> Generation:
        name = self.projection.name
        table = rows_table(session, name, number)
        session.execute(f"DROP TABLE IF EXISTS {table}")
        self.projection.create(session, table)
        session.execute(
            f"INSERT INTO {_positions(session)} "
            "(name, generation, live, transaction_id, notification_id) VALUES (?, ?, ?, ?, ?)",
            (name, number, int(live), START.transaction, START.notification_id),
        )
        return Generation(number, live, START)

    def _drop(self, session: Session, generation: Generation) -> None:
        session.execute(
            f"DROP TABLE IF EXISTS {rows_table(session, self.projection.name, generation.number)}"
        )
        session.execute(
            f"DELETE FROM {_positions(session)} WHERE name = ? AND generation = ?",
            (self.projection.name, generation.number),
        )

    def _log_size(self) -> int:
        with self._driver.transaction(None) as session:
            row = session.one("SELECT count(*) FROM {events}")
        return 0 if row is None else int(row[0])


def _positions(session: Session) -> str:
    return qualified(session.dialect, POSITIONS)


def _serialise(session: Session, name: str) -> None:
    # SQLite: BEGIN IMMEDIATE already excludes every other writer.
    if not session.dialect.dense_notification_ids:
        session.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"nenjim-projection:{name}",))
