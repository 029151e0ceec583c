"""The notifications this process committed last to one log, for its own followers.

Writers of one process that each keep a view of the log (independent
ingestions, say) must read every other writer's events after their own
append. Those events were committed by this process a moment ago, through
the log's commit group: :class:`RecentCommits` keeps the last of them, as
the notifications a read of the log would return, so that such a reader is
answered from memory when it holds every id it asks for. Ids committed by
another process are not here; a range that misses any id is read from the
store, so nothing is ever skipped.

With each notification it keeps the event object its writer appended, when
the writer gave it: a reader of this process asks :meth:`RecentCommits.appended`
for it instead of decoding the stored bytes again. Events are immutable, so
every reader may share the writer's object.

A reader may also leave with a notification what it made of the log up to it
(:meth:`RecentCommits.attach`), for the process's other readers of the same
log (:meth:`RecentCommits.latest_attached`): what lies at an id of a log is
what any reader of it reads there.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence

from eventsourcing.persistence import Notification, StoredEvent

KEPT = 1024
"""Notifications kept: the newest, about a thousand appends' worth of catch-up."""

ATTACHED = 16
"""Values attached (:meth:`RecentCommits.attach`) kept: those of the newest notifications."""

CommittedAppend = tuple[Sequence[int] | None, Sequence[StoredEvent], Sequence[object] | None]
"""One committed append: its ids (``None``: not known), its stored events, and the event
objects they were encoded from (``None``: not given)."""


class RecentCommits:
    """A bounded map of the newest notification ids this process committed."""

    __slots__ = ("_attached", "_by_id", "_lock", "_order")

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Notification, object]] = {}
        self._attached: dict[int, object] = {}
        self._order: deque[int] = deque()
        self._lock = threading.Lock()

    def record(self, appends: Iterable[CommittedAppend]) -> None:
        """A committed batch: each append's ids, stored events and event objects."""
        kept: list[tuple[int, Notification, object]] = []
        for ids, stored_events, given in appends:
            if ids is None or len(ids) != len(stored_events):
                continue
            objects = given if given is not None and len(given) == len(ids) else (None,) * len(ids)
            # Built once here, outside the lock: every reader is given these very objects.
            kept.extend(
                (
                    id_,
                    Notification(
                        id=id_,
                        originator_id=event.originator_id,
                        originator_version=event.originator_version,
                        topic=event.topic,
                        state=event.state,
                    ),
                    appended,
                )
                for id_, event, appended in zip(ids, stored_events, objects, strict=True)
            )
        with self._lock:
            for id_, notification, appended in kept:
                if self._order and id_ <= self._order[-1]:
                    # Ids only grow in a log: this one was made anew (a store
                    # dropped and created again), so nothing kept is its own.
                    self._by_id.clear()
                    self._attached.clear()
                    self._order.clear()
                self._by_id[id_] = (notification, appended)
                self._order.append(id_)
            while len(self._order) > KEPT:
                forgotten = self._order.popleft()
                del self._by_id[forgotten]
                self._attached.pop(forgotten, None)

    def between(self, after: int, through: int) -> list[Notification] | None:
        """Every notification after ``after`` up to ``through``, or ``None`` if any is
        missing (committed by another process, or no longer kept)."""
        with self._lock:
            found = [self._by_id.get(id_) for id_ in range(after + 1, through + 1)]
        notifications = []
        for kept in found:
            if kept is None:
                return None
            notifications.append(kept[0])
        return notifications

    def appended(self, notification: Notification) -> object | None:
        """The event object the writer of ``notification`` appended, if :meth:`between`
        gave that very notification and the writer gave the object; else ``None``
        (decode it). A notification read from a store, even an equal one, is never
        answered for.
        """
        with self._lock:
            kept = self._by_id.get(notification.id)
        if kept is None or kept[0] is not notification:
            return None
        return kept[1]

    def attach(self, id_: int, value: object) -> bool:
        """Keep ``value`` with notification ``id_`` while the notification is kept and is
        among the :data:`ATTACHED` newest with a value (the last value attached wins);
        whether the notification is kept."""
        with self._lock:
            if id_ not in self._by_id:
                return False
            attached = self._attached
            attached[id_] = value
            while len(attached) > ATTACHED:
                del attached[min(attached)]
            return True

    def latest_attached(self, after: int, through: int) -> tuple[int, object] | None:
        """The newest value attached to a notification after ``after`` up to ``through``,
        with its id; ``None`` if there is none."""
        with self._lock:
            newest = max((id_ for id_ in self._attached if after < id_ <= through), default=None)
            return None if newest is None else (newest, self._attached[newest])
