"""Immutable chain snapshots with an as-of index, built from accepted-revision events.

The projection folds ``JournalChain`` events, in notification-log order, into
a :class:`JournalWorldview`: per artifact a :class:`ChainSnapshot` whose
revisions ascend by Journal version, and whose as-of lookup is a binary
search over the version keys. Every update builds a new worldview and
leaves the old one untouched, so a reader holding one never sees it change.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import DomainEventProtocol

from domain.journal.chain import JournalChain
from domain.journal.document import JournalRevision
from domain.journal.parser import parse_journal
from domain.journal.values import ArtifactCoordinate, JournalVersion

_PAGE = 500


class ProjectionIntegrityError(RuntimeError):
    """An event in the log contradicts the projection (an edited or corrupt log)."""


@dataclass(frozen=True, slots=True)
class ChainSnapshot:
    """One artifact's revisions, ascending by Journal version, with an as-of index."""

    coordinate: ArtifactCoordinate
    revisions: tuple[JournalRevision, ...]
    _keys: tuple[str, ...] = field(repr=False, compare=False)

    @classmethod
    def of(
        cls, coordinate: ArtifactCoordinate, revisions: tuple[JournalRevision, ...]
    ) -> ChainSnapshot:
        """Index ``revisions`` (already in ascending version order)."""
        return cls(coordinate, revisions, tuple(str(r.version) for r in revisions))

    @property
    def latest(self) -> JournalRevision:
        """The chain head."""
        return self.revisions[-1]

    def exact(self, version: JournalVersion) -> JournalRevision | None:
        """The revision at exactly ``version``."""
        i = bisect.bisect_left(self._keys, str(version))
        return self.revisions[i] if i < len(self._keys) and self._keys[i] == str(version) else None

    def as_of(self, version: JournalVersion) -> JournalRevision | None:
        """The newest revision at or before ``version`` (binary search)."""
        i = bisect.bisect_right(self._keys, str(version))
        return self.revisions[i - 1] if i else None

    def extended(self, revisions: Iterable[JournalRevision]) -> ChainSnapshot:
        """A new snapshot with ``revisions`` appended after the head."""
        added = tuple(revisions)
        return ChainSnapshot(
            self.coordinate,
            self.revisions + added,
            self._keys + tuple(str(r.version) for r in added),
        )


@dataclass(frozen=True, slots=True)
class JournalWorldview:
    """Everything accepted up to ``position`` in the notification log."""

    chains: Mapping[ArtifactCoordinate, ChainSnapshot]
    position: int = 0

    @classmethod
    def empty(cls) -> JournalWorldview:
        """The view of an empty log."""
        return cls(MappingProxyType({}), 0)

    def chain(self, coordinate: ArtifactCoordinate) -> ChainSnapshot | None:
        """The snapshot of one artifact, or ``None``."""
        return self.chains.get(coordinate)


class JournalChainsProjection:
    """Folds ``JournalChain`` events into successive immutable worldviews."""

    def __init__(self) -> None:
        self._view = JournalWorldview.empty()

    @property
    def view(self) -> JournalWorldview:
        """The latest worldview."""
        return self._view

    def apply(
        self,
        events: Iterable[tuple[int, DomainEventProtocol[UUID]]],
        parsed: Mapping[str, JournalRevision] | None = None,
    ) -> JournalWorldview:
        """Fold ``(notification id, event)`` pairs, in log order, into a new view.

        The new view becomes :attr:`view` only if every event applied.
        ``parsed`` may offer already parsed revisions by digest; one is used
        only when its text is exactly the event's, so it saves work and
        changes nothing.
        """
        view = self._view
        added: dict[ArtifactCoordinate, list[JournalRevision]] = {}
        position = view.position
        for position, event in events:
            if position <= view.position:
                raise ProjectionIntegrityError(
                    f"notification {position} is not after the projection's {view.position}"
                )
            if isinstance(event, JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted):
                revision = _revision(event, position, parsed or {})
                added.setdefault(revision.coordinate, []).append(revision)
        if position == view.position:
            return view  # nothing new: keep the published object
        chains = dict(view.chains)
        for coordinate, revisions in added.items():
            current = chains.get(coordinate)
            _check_order(current, revisions)
            chains[coordinate] = (
                ChainSnapshot.of(coordinate, tuple(revisions))
                if current is None
                else current.extended(revisions)
            )
        self._view = JournalWorldview(MappingProxyType(chains), position)
        return self._view

    def catch_up(
        self, log: Application[UUID], parsed: Mapping[str, JournalRevision] | None = None
    ) -> JournalWorldview:
        """Apply every notification after :attr:`view`'s position, then publish."""
        return self.apply(read_after(log, self._view.position), parsed)


def read_after(
    log: Application[UUID], position: int
) -> Iterator[tuple[int, DomainEventProtocol[UUID]]]:
    """The log's domain events after ``position``, in notification order."""
    while True:
        page = log.recorder.select_notifications(
            start=position, limit=_PAGE, inclusive_of_start=False
        )
        for notification in page:
            position = notification.id
            yield notification.id, log.mapper.to_domain_event(notification)
        if len(page) < _PAGE:
            return


def _revision(
    event: JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted,
    position: int,
    parsed: Mapping[str, JournalRevision],
) -> JournalRevision:
    known = parsed.get(event.digest)
    revision = known if known is not None and known.text == event.text else None
    if revision is None:
        revision = parse_journal(event.text)
    if (
        str(revision.digest) != event.digest
        or str(revision.coordinate) != event.coordinate
        or str(revision.version) != event.journal_version
    ):
        raise ProjectionIntegrityError(
            f"notification {position}: stored text does not match its event "
            f"(digest {event.digest}, artifact {event.coordinate}, version {event.journal_version})"
        )
    return revision


def _check_order(current: ChainSnapshot | None, revisions: list[JournalRevision]) -> None:
    previous = None if current is None else current.latest
    for revision in revisions:
        if previous is None:
            if not revision.is_genesis:
                raise ProjectionIntegrityError(
                    f"{revision.coordinate}: chain starts without genesis"
                )
        elif revision.predecessor != previous.digest or not previous.version < revision.version:
            raise ProjectionIntegrityError(
                f"{revision.coordinate}: revision {revision.version} does not follow "
                f"{previous.version}"
            )
        previous = revision
