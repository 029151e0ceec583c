"""The group commit of one log in this process, with what its leaders committed.

Every writer of a process that appends to the same log (the same database
file or PostgreSQL schema, the same events table) goes through that log's
:class:`LogCommits`, whichever ``LogApplication`` it holds: its appends are
group-committed (:mod:`nenjim.infrastructure.store.group_commit`), each
request in a savepoint of its own, so a request whose write is rejected (a
stream-version or claim conflict) raises its own error while the others
commit in order. An append in several batches holds the group's lead for
its whole transaction.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent

from nenjim.infrastructure.log.recent_commits import CommittedAppend, RecentCommits
from nenjim.infrastructure.log.tiles import CommittedEdge
from nenjim.infrastructure.store.group_commit import GroupCommit, Pending


class AppendRequest(Pending[Sequence[int] | None]):
    """One caller's append: its events and the recorder's extra arguments (claims,
    entries); its result, the notification ids."""

    __slots__ = ("kwargs", "stored_events")

    def __init__(self, stored_events: Sequence[StoredEvent], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.stored_events = stored_events
        self.kwargs = kwargs


APPENDED = "appended"
"""The recorder's keyword that gives, beside the stored events, the event objects they
were encoded from (kept with the notifications this process committed)."""


def committed_appends(batch: Sequence[AppendRequest]) -> Iterator[CommittedAppend]:
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


class LogCommits:
    """One log's group commit in this process, and what its leaders committed.

    ``committed_edge`` is the tiled log's edge as its leaders last committed it
    (see :class:`~nenjim.infrastructure.log.tiles.CommittedEdge`): shared by every
    recorder of the log in this process, and touched only by the leader.
    ``recent`` holds the notifications its leaders committed last, which the
    recorders record after each batch's commit.
    """

    def __init__(self) -> None:
        self.group: GroupCommit[AppendRequest] = GroupCommit()
        self.committed_edge = CommittedEdge()
        self.recent = RecentCommits()


_LOGS: weakref.WeakValueDictionary[Hashable, LogCommits] = weakref.WeakValueDictionary()
_LOGS_LOCK = threading.Lock()


def log_commits(key: Hashable) -> LogCommits:
    """The process's :class:`LogCommits` of the log ``key`` names (kept while a recorder
    holds it)."""
    with _LOGS_LOCK:
        commits = _LOGS.get(key)
        if commits is None:
            commits = _LOGS[key] = LogCommits()
        return commits
