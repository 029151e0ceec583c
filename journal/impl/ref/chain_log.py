"""The chain projection fed from a Journal log: its events read, checked and folded.

:mod:`nenjim.projections.journal_chains` is a pure fold; this module reads
the log for it. A notification's topic is checked before its event is
decoded, and a log that cannot be read as one (``LogDamagedError``) is the
fold's :class:`~nenjim.projections.journal_chains.ProjectionIntegrityError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Notification

from nenjim.domain.journal.chain import EVENT_TOPICS
from nenjim.infrastructure.log import LogDamagedError, LogReader
from nenjim.projections.journal_chains import (
    JournalChainsProjection,
    JournalWorldview,
    KnownTexts,
    ProjectionIntegrityError,
)

_LOGGER = logging.getLogger(__name__)


def catch_up(
    projection: JournalChainsProjection,
    log: LogReader,
    parsed: KnownTexts | None = None,
    *,
    through: int | None = None,
    shared: bool = False,
) -> JournalWorldview:
    """Apply every notification after the projection's view, then publish.

    ``through``: a position known to be committed; the view then reaches at
    least it, and maybe not the log's end (see
    :meth:`~nenjim.infrastructure.log.LogReader.notifications_through`).

    ``shared`` (with ``through``): start from the newest view that another
    projection of this process shared for the same log (:func:`share`) up to
    ``through``, instead of folding again the events it folded. A shared view is
    never taken past an event of ``parsed`` (the caller's own revisions), so the
    caller's parses stay in its view.
    """
    if shared and through is not None:
        _take_shared(projection, log, through, parsed or {})
    before = projection.view.position
    view = projection.apply(read_after(log, before, through), parsed)
    if view.position != before:
        _LOGGER.info(
            "the Journal's chains caught up with the log: position %d (%d new)",
            view.position,
            view.position - before,
        )
    return view


def share(projection: JournalChainsProjection, log: LogReader) -> None:
    """Offer the projection's view to this process's other projections of ``log`` (see
    :func:`catch_up`); the caller vouches that the view is the fold of ``log`` up to
    its position."""
    shareable = projection.shareable()
    if shareable is not None:
        log.share(shareable.view.position, shareable)


def _take_shared(
    projection: JournalChainsProjection, log: LogReader, through: int, parsed: KnownTexts
) -> None:
    start = projection.view.position
    found = log.shared(start, through)
    if found is not None and parsed:
        own = _first_of(log, start, found[0], parsed)
        if own is not None:  # the caller's own revision: fold it, with its parse
            found = log.shared(start, own - 1)
    if found is not None:
        projection.adopt(*found)


def _first_of(log: LogReader, after: int, through: int, parsed: KnownTexts) -> int | None:
    """The position of the first event after ``after`` up to ``through`` whose revision
    ``parsed`` holds, or ``None``."""
    for position, event in read_after(log, after, through):
        if position > through:
            return None
        if getattr(event, "digest", None) in parsed:
            return position
    return None


def read_after(
    log: LogReader, position: int, through: int | None = None
) -> Iterator[tuple[int, DomainEventProtocol[UUID]]]:
    """The log's chain events after ``position``, in notification order (with
    ``through``, at least up to it)."""
    notifications = (
        log.notifications(position)
        if through is None
        else log.notifications_through(position, through)
    )
    try:
        for notification in notifications:
            yield notification.id, decode_event(log, notification)
    except LogDamagedError as error:
        raise ProjectionIntegrityError(str(error)) from error


def decode_event(log: LogReader, notification: Notification) -> DomainEventProtocol[UUID]:
    """The chain event a notification stores; its topic is checked before anything is imported."""
    if notification.topic not in EVENT_TOPICS:
        raise ProjectionIntegrityError(
            f"notification {notification.id}: unexpected event topic {notification.topic!r}"
        )
    try:
        return log.event(notification)
    except Exception as error:  # the stored state is whatever bytes the row holds
        raise ProjectionIntegrityError(
            f"notification {notification.id}: cannot decode the stored event: {error}"
        ) from error
