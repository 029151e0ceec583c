"""``LogReader``: a log's events in notification order, for the log's followers.

Projections and audits read a log here, and only here, through
``eventsourcing``'s public notification log (``LocalNotificationLog``) and
the application's mapper, never through its recorder. Reading takes two
steps on purpose: a follower sees each notification (its id and topic)
first and decodes its event only when it expects that topic, because
decoding imports the class the topic names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast
from uuid import UUID

from eventsourcing.application import Application, LocalNotificationLog
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Notification

from nenjim.infrastructure.log.recent_commits import RecentCommits
from nenjim.infrastructure.store.errors import LogDamagedError

PAGE = 500
"""Notifications read per round trip."""


class LogReader:
    """Pages of one application's notification log, and their events."""

    def __init__(self, application: Application[UUID]) -> None:
        self._notifications = LocalNotificationLog(application.recorder, section_size=PAGE)
        self._application = application
        # What this process committed last to the log, if its recorder keeps it.
        self._recent: RecentCommits | None = getattr(application.recorder, "recent_commits", None)

    def last_position(self) -> int:
        """The id of the last notification (0 for an empty log)."""
        return self._application.recorder.max_notification_id() or 0

    def notifications(self, after: int) -> Iterator[Notification]:
        """Every notification after position ``after``, in order, a page at a time.

        A row the recorder cannot make a notification of (a NULL or mistyped
        originator id or version, edited behind the engine's back) raises
        ``LogDamagedError`` naming the page it is in.
        """
        while True:
            page = self._select(after, PAGE)
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].id

    def _select(self, after: int, limit: int, *, inclusive: bool = False) -> Sequence[Notification]:
        try:
            return self._notifications.select(
                start=after, limit=limit, inclusive_of_start=inclusive
            )
        except (TypeError, ValueError) as error:
            first = after if inclusive else after + 1
            raise LogDamagedError(
                f"a stored event from notification {first} on cannot be read as an event "
                f"(an edited row: {type(error).__name__}: {error})"
            ) from error

    def notifications_through(self, after: int, through: int) -> Iterator[Notification]:
        """The notifications after ``after``, at least up to ``through`` (which the caller
        knows is committed): from memory when this process committed each of them
        last, else from the store, to its end."""
        recent = None if self._recent is None else self._recent.between(after, through)
        if recent is None:
            return self.notifications(after)
        return iter(recent)

    def event(self, notification: Notification) -> DomainEventProtocol[UUID]:
        """The domain event a notification stores (its topic resolved to a class); for one
        this process appended and :meth:`notifications_through` gave from memory, the
        appended event itself, not decoded again."""
        if self._recent is not None:
            appended = self._recent.appended(notification)
            if appended is not None:
                return cast(DomainEventProtocol[UUID], appended)
        return self._application.mapper.to_domain_event(notification)

    def share(self, position: int, value: object) -> None:
        """Leave ``value``, what this reader made of the log up to ``position``, for the
        process's other readers of the log (:meth:`shared`), while this process keeps the
        notification at ``position`` in memory (it committed it last); else nothing."""
        if self._recent is not None:
            self._recent.attach(position, value)

    def shared(self, after: int, through: int) -> tuple[int, object] | None:
        """The newest value a reader of this process shared (:meth:`share`) at a position
        after ``after`` up to ``through``, with that position; ``None`` if there is none."""
        return None if self._recent is None else self._recent.latest_attached(after, through)

    def at(self, position: int) -> Notification | None:
        """The notification at ``position``, or ``None``."""
        page = self._select(position, 1, inclusive=True)
        return page[0] if page and page[0].id == position else None
