"""Following either log: catch up, then sleep until woken by a commit or the poll interval.

PostgreSQL wakes a follower with ``LISTEN`` (the storage log's trigger, the
Journal log's append, notify on commit); SQLite and ``memory:`` have no
notifications, so a follower polls. Either way a wake-up only says "look":
what is read is decided by the position and the log's safe bound alone, so
a lost or early notification delays an event by at most one poll and never skips it. When
events are committed but not yet final (an older PostgreSQL transaction is
still running), the follower looks again soon, backing off to
:data:`MAX_RECHECK`, since the transaction holding the bound back may write
no event and send no notification when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.tracking.projections import kind_of

if TYPE_CHECKING:
    from nenjim.infrastructure.log.application import LogApplication

DEFAULT_POLL_INTERVAL = 0.5
"""Seconds between looks when nothing wakes the follower."""

MAX_RECHECK = 0.05
"""Longest pause between looks while committed events wait to become final."""

_FIRST_RECHECK = 0.002


class Wakeup(Protocol):
    """Something a follower sleeps on between catch-ups."""

    def wait(self, timeout: float) -> None:
        """Return when woken, or after ``timeout`` seconds, or at once once stopped."""
        ...

    def close(self) -> None:
        """Release what the wake-up holds (idempotent)."""
        ...


class Follows(Protocol):
    """A projection a follower keeps up to date."""

    def catch_up(self) -> int:
        """Apply every final event after the position; how many."""
        ...

    def pending(self) -> bool:
        """Whether committed events lie after the position (final or not)."""
        ...


class Polling:
    """The wake-up of stores without notifications: a timer that ``stop`` cuts short."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop

    def wait(self, timeout: float) -> None:
        self._stop.wait(timeout)

    def close(self) -> None:
        """Nothing to release."""


def wakeup_for(log: LogApplication | Backend, stop: threading.Event) -> Wakeup:
    """The wake-up of a Journal log (its application) or a storage log (its backend): its
    store kind's (``LISTEN`` on PostgreSQL), else (and for a log that only reads) polling."""
    kind = kind_of(log)
    # A store that only reads (a hot standby) cannot LISTEN, and no NOTIFY is replicated.
    if kind.wakeup is None or getattr(log, "read_only", False):
        return Polling(stop)
    return cast(Wakeup, kind.load(kind.wakeup)(log, stop))


def follow(
    target: Follows,
    wakeup: Wakeup,
    stop: threading.Event,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    on_applied: Callable[[int], None] | None = None,
) -> None:
    """Keep ``target`` caught up until ``stop`` is set (checked between catch-ups)."""
    recheck = _FIRST_RECHECK
    while not stop.is_set():
        applied = target.catch_up()
        if applied and on_applied is not None:
            on_applied(applied)
        if target.pending():
            wakeup.wait(recheck)
            recheck = min(recheck * 2, MAX_RECHECK, poll_interval)
        else:
            recheck = _FIRST_RECHECK
            wakeup.wait(poll_interval)
