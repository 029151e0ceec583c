"""Reading ``storage_events`` in log order after a position, only where it is final.

A position is the pair ``(transaction, notification_id)`` of the last event
applied; the log order is the order of these pairs.

- SQLite numbers events ``max + 1`` under its single writer lock, so ids are
  dense and in commit order: ``transaction`` is always 0 and every
  committed event is final.
- PostgreSQL takes ids from a sequence when a row is inserted, not when it
  commits: writer A may hold id 10 while B commits 11. Each row therefore
  carries the id of the transaction that wrote it (``xid8``). Every
  transaction id below ``pg_snapshot_xmin(pg_current_snapshot())`` has
  finished (committed or rolled back), and a transaction that has not yet
  taken an id gets one at or above that bound. So the events whose
  transaction is below the bound are final: no event can ever join them.
  Reading only those, in ``(transaction_id, notification_id)`` order, yields
  a prefix of the log order that later reads only extend. An event that
  commits later has a transaction id at or above the bound of every earlier
  read, hence sorts after every position handed out: resuming after a
  position never skips an event, and ``>`` never repeats one. Rows written
  before the column existed carry transaction 0 and come first, in id order.
- ``memory:`` keeps its log in a list: the position is the index, and a
  reader holds the store's one lock.

A purge rewrites the events it removes in place (same position, topic
``Purged``, a stub without payload: :attr:`StoredEvent.is_stub`) and appends
one marker (:attr:`StoredEvent.purge`) at a new position. A follower that
applied the removed events before never sees them again (no position
moved); one that had not yet sees the stubs. Either way the marker comes
after: a follower skips stubs and, at the marker, drops what it built from
the purged key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage import purge as purges
from nenjim.infrastructure.storage.sql.events import decode_event
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import ProjectionDamagedError


@immutable
@dataclass(frozen=True, slots=True, order=True)
class LogPosition:
    """Where a follower stands: the last event it applied, in log order."""

    transaction: int
    """The writing transaction's id (PostgreSQL ``xid8``); 0 on SQLite and ``memory:``."""

    notification_id: int
    """The event's ``notification_id`` (SQLite, PostgreSQL) or its index + 1 (``memory:``)."""


START = LogPosition(0, 0)
"""Before the first event."""


@immutable
@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of the storage log, its state decoded."""

    position: LogPosition
    topic: str
    state: Mapping[str, Any]

    @property
    def is_stub(self) -> bool:
        """Whether a purge removed this event's payload (its state is a stub)."""
        return self.topic == purges.PURGED

    @property
    def purge(self) -> purges.Purge | None:
        """The purge this event marks (what to drop from a read model), or ``None``."""
        return purges.marker_of(self.state) if self.topic == purges.PURGE else None


def read_after(session: Session, after: LogPosition, limit: int) -> list[StoredEvent]:
    """Up to ``limit`` final events after ``after``, in log order."""
    if session.dialect.dense_notification_ids:
        rows = session.all(
            "SELECT 0, notification_id, topic, state FROM {events} "
            "WHERE notification_id > ? ORDER BY notification_id LIMIT ?",
            (after.notification_id, limit),
        )
    else:
        rows = session.all(
            "SELECT transaction_id::text::bigint, notification_id, topic, state FROM {events} "
            "WHERE (transaction_id, notification_id) > (?::text::xid8, ?) "
            "AND transaction_id < pg_snapshot_xmin(pg_current_snapshot()) "
            "ORDER BY transaction_id, notification_id LIMIT ?",
            (after.transaction, after.notification_id, limit),
        )
    return [
        StoredEvent(LogPosition(int(xid), int(nid)), str(topic), decode_event(str(topic), state))
        for xid, nid, topic, state in rows
    ]


def log_size(session: Session) -> int:
    """How many events the log holds (committed, final or not)."""
    row = session.one("SELECT count(*) FROM {events}")
    assert row is not None  # an aggregate always answers one row
    return int(row[0])


def position_at(session: Session, count: int) -> LogPosition:
    """The position after the first ``count`` events in log order (``START`` for 0).

    A count of final events names one event for good: every event that is
    not final yet sorts after all of them. SQLite's ids are that count."""
    if count == 0 or session.dialect.dense_notification_ids:
        return LogPosition(0, count)
    row = session.one(
        "SELECT transaction_id::text::bigint, notification_id FROM {events} "
        "ORDER BY transaction_id, notification_id LIMIT 1 OFFSET ?",
        (count - 1,),
    )
    if row is None:
        raise ProjectionDamagedError(
            f"a projection applied {count} events of the storage log, which holds fewer"
        )
    return LogPosition(int(row[0]), int(row[1]))


def commit_horizon(session: Session) -> int:
    """A bound below which lies every transaction that has committed so far: once none
    below it is running (:func:`is_final`), every event committed before this call is
    final. PostgreSQL: the current snapshot's ``xmax``; 0 where every committed event is
    final already (SQLite)."""
    if session.dialect.dense_notification_ids:
        return 0
    row = session.one("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
    assert row is not None  # a SELECT without FROM answers one row
    return int(row[0])


def is_final(session: Session, horizon: int) -> bool:
    """Whether no transaction below ``horizon`` (see :func:`commit_horizon`) is running, so
    that every event they wrote is final. Asked in a transaction that wrote nothing: one
    that did would count itself."""
    if session.dialect.dense_notification_ids:
        return True
    row = session.one(
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint >= ?", (horizon,)
    )
    return row is not None and bool(row[0])


def pending_after(session: Session, after: LogPosition) -> bool:
    """Whether any committed event lies after ``after``, final or not (uses the log's index)."""
    if session.dialect.dense_notification_ids:
        row = session.one(
            "SELECT EXISTS (SELECT 1 FROM {events} WHERE notification_id > ?)",
            (after.notification_id,),
        )
    else:
        row = session.one(
            "SELECT EXISTS (SELECT 1 FROM {events} WHERE "
            "(transaction_id, notification_id) > (?::text::xid8, ?))",
            (after.transaction, after.notification_id),
        )
    return row is not None and bool(row[0])
