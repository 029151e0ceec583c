"""Group commit: concurrent appends to one log share one transaction and one commit.

Every writer of a process that appends to the same log (the same database
file or PostgreSQL schema, the same events table) goes through that log's
:class:`CommitGroup`, whichever ``LogApplication`` it holds. A writer that
finds no batch in progress becomes the leader: it takes every request queued
so far and writes them in one transaction, each in a savepoint of its own,
then commits once. Requests that arrive meanwhile wait for the next batch,
led by one of them, unless the batch's writer takes them in before its
commit (:meth:`CommitGroup.absorb`; the SQLite log's writer does). Every
caller returns, or raises, only after its batch's commit, so an acknowledged
append is durable; a request whose write is rejected (a stream-version or
claim conflict) is rolled back to its savepoint and raises its own error,
while the others commit in order.
A writer with a transaction of its own (an append in several batches) holds
the lead for its whole transaction: the others queue up until it ends.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from eventsourcing.persistence import StoredEvent

from nenjim.infrastructure.log.recent_commits import CommittedAppend, RecentCommits
from nenjim.infrastructure.log.tiles import CommittedEdge

T = TypeVar("T")


class AppendRequest(Generic[T]):
    """One caller's append: its events and the recorder's extra arguments (claims, entries)."""

    __slots__ = ("done", "error", "kwargs", "result", "stored_events")

    def __init__(self, stored_events: Sequence[StoredEvent], kwargs: dict[str, Any]) -> None:
        self.stored_events = stored_events
        self.kwargs = kwargs
        self.result: T | None = None
        self.error: BaseException | None = None
        self.done = False

    def outcome(self) -> T | None:
        """The request's result, or its own error raised."""
        if self.error is not None:
            raise self.error
        return self.result


APPENDED = "appended"
"""The recorder's keyword that gives, beside the stored events, the event objects they
were encoded from (kept with the notifications this process committed)."""


def committed_appends(
    batch: Sequence[AppendRequest[Sequence[int] | None]],
) -> Iterator[CommittedAppend]:
    """The ids, stored events and event objects of each append of a committed batch
    that was not refused."""
    return (
        (request.result, request.stored_events, request.kwargs.get(APPENDED))
        for request in batch
        if request.error is None
    )


StoredBatch = tuple[Sequence[StoredEvent], dict[str, Any]]
"""One batch of an append in several batches: its events, and the recorder's extra
arguments (claims, entries)."""

# Writes a batch in one transaction: sets each request's result or (rejected
# alone) its error; raises for a failure of the whole batch (nothing committed).
BatchWriter = Callable[[list[AppendRequest[T]]], None]


class CommitGroup(Generic[T]):
    """The queue of one log's pending appends in this process, and its current leader.

    ``committed_edge`` is the tiled log's edge as its leaders last committed it
    (see :class:`~nenjim.infrastructure.log.tiles.CommittedEdge`): shared by every
    recorder of the log in this process, and touched only by the leader.
    ``recent`` holds the notifications its leaders committed last, which the
    recorders record after each batch's commit.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._queue: list[AppendRequest[T]] = []
        self._leading = False
        self.committed_edge = CommittedEdge()
        self.recent = RecentCommits()

    def append(
        self, stored_events: Sequence[StoredEvent], kwargs: dict[str, Any], write: BatchWriter[T]
    ) -> T | None:
        """Append as part of the next batch; returns once that batch is committed."""
        request: AppendRequest[T] = AppendRequest(stored_events, kwargs)
        with self._condition:
            self._queue.append(request)
            while self._leading and not request.done:
                self._condition.wait()
            if request.done:  # another writer led the batch that held it
                return request.outcome()
            self._leading = True
            batch, self._queue = self._queue, []
        try:
            write(batch)
        except BaseException as error:
            for member in batch:  # the batch is rolled back: each caller learns why
                member.error = error
        finally:
            with self._condition:
                for member in batch:
                    member.done = True
                self._leading = False
                self._condition.notify_all()
        return request.outcome()

    def absorb(self, batch: list[AppendRequest[T]], limit: int) -> list[AppendRequest[T]]:
        """Move what queued into the running ``batch`` (see :func:`take_in`); the requests
        moved, which its writer writes before it commits."""
        if not self._queue:  # read unlocked: one that queues just after leads the next
            return []
        with self._condition:
            return take_in(self._queue, batch, limit)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Lead the group for the block (a caller's own transaction); appends that arrive
        meanwhile wait, then go on in the next batch."""
        with self._condition:
            while self._leading:
                self._condition.wait()
            self._leading = True
        try:
            yield
        finally:
            with self._condition:
                self._leading = False
                self._condition.notify_all()


BATCH_LIMIT = 64
"""The most appends (or operations) one commit takes in."""


def take_in(queue: list[T], batch: list[T], limit: int) -> list[T]:
    """Move the first of ``queue`` into the running ``batch``, in arrival order, until it
    holds ``limit``; those moved (none if nothing queued). The caller holds the queue's lock.

    A batch's writer takes in, before it commits, what queued while it wrote: callers
    answered by the previous commit come back while this batch runs, and would otherwise
    wait for it and form the next batch, so that writers settle into two halves that
    commit in turn."""
    room = limit - len(batch)
    if room <= 0 or not queue:
        return []
    moved = queue[:room]
    del queue[:room]
    batch.extend(moved)
    return moved


_GROUPS: weakref.WeakValueDictionary[Hashable, CommitGroup[Any]] = weakref.WeakValueDictionary()
_GROUPS_LOCK = threading.Lock()


def commit_group(key: Hashable) -> CommitGroup[Any]:
    """The process's commit group of the log ``key`` names (kept while a recorder holds it)."""
    with _GROUPS_LOCK:
        group = _GROUPS.get(key)
        if group is None:
            group = _GROUPS[key] = CommitGroup()
        return group
