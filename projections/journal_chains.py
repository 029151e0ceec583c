"""Immutable chain snapshots with an as-of index, built from accepted-revision events.

The projection folds ``JournalChain`` events, in notification-log order, into
a :class:`JournalWorldview`: per artifact a :class:`ChainSnapshot` whose
revisions ascend by Journal version, and whose as-of lookup is a binary
search over the version keys. Every update builds a new worldview and
leaves the old one untouched, so a reader holding one never sees it change.

Folding checks each event against the chain (the text's SHA-256 is its
digest, the predecessor is the previous head, versions increase) but does
not parse the text: a revision is parsed on first use and kept. Revisions
the writer had just parsed are handed over, so they are never parsed twice.
A rebuild therefore costs a digest per event, not a parse.
"""

from __future__ import annotations

import bisect
import hashlib
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

_AcceptedEvent = JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted


class ProjectionIntegrityError(RuntimeError):
    """An event in the log contradicts the projection (an edited or corrupt log)."""


class StoredRevision:
    """One accepted revision as the log holds it; parsed once, on first use."""

    __slots__ = ("_parsed", "coordinate", "digest", "position", "text", "version_key")

    def __init__(
        self,
        *,
        coordinate: str,
        version_key: str,
        digest: str,
        text: str,
        position: int,
        parsed: JournalRevision | None = None,
    ) -> None:
        self.coordinate = coordinate
        self.version_key = version_key
        self.digest = digest
        self.text = text
        self.position = position
        self._parsed = parsed

    @property
    def revision(self) -> JournalRevision:
        """The parsed revision (parsed on first use; the same object afterwards)."""
        parsed = self._parsed
        if parsed is None:
            parsed = parse_journal(self.text)
            if (str(parsed.coordinate), str(parsed.version)) != (
                self.coordinate,
                self.version_key,
            ):
                raise ProjectionIntegrityError(
                    f"notification {self.position}: stored text is {parsed.coordinate} "
                    f"{parsed.version}, its event says {self.coordinate} {self.version_key}"
                )
            self._parsed = parsed
        return parsed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoredRevision):
            return NotImplemented
        return (self.digest, self.text) == (other.digest, other.text)

    def __hash__(self) -> int:
        return hash(self.digest)


@dataclass(frozen=True, slots=True)
class ChainSnapshot:
    """One artifact's revisions, ascending by Journal version, with an as-of index."""

    coordinate: ArtifactCoordinate
    stored: tuple[StoredRevision, ...]
    _keys: tuple[str, ...] = field(repr=False, compare=False)

    @classmethod
    def of(
        cls, coordinate: ArtifactCoordinate, stored: tuple[StoredRevision, ...]
    ) -> ChainSnapshot:
        """Index ``stored`` (already in ascending version order)."""
        return cls(coordinate, stored, tuple(s.version_key for s in stored))

    @classmethod
    def from_revisions(cls, revisions: tuple[JournalRevision, ...]) -> ChainSnapshot:
        """A snapshot of already parsed revisions of one artifact, in ascending order."""
        stored = tuple(
            StoredRevision(
                coordinate=str(r.coordinate),
                version_key=str(r.version),
                digest=str(r.digest),
                text=r.text,
                position=0,
                parsed=r,
            )
            for r in revisions
        )
        return cls.of(revisions[0].coordinate, stored)

    @property
    def revisions(self) -> tuple[JournalRevision, ...]:
        """Every revision, ascending by Journal version."""
        return tuple(s.revision for s in self.stored)

    @property
    def latest(self) -> JournalRevision:
        """The chain head."""
        return self.stored[-1].revision

    def digest_at(self, version: JournalVersion) -> str | None:
        """The digest accepted at exactly ``version`` (no parsing)."""
        i = bisect.bisect_left(self._keys, str(version))
        return (
            self.stored[i].digest if i < len(self._keys) and self._keys[i] == str(version) else None
        )

    def exact(self, version: JournalVersion) -> JournalRevision | None:
        """The revision at exactly ``version``."""
        i = bisect.bisect_left(self._keys, str(version))
        if i < len(self._keys) and self._keys[i] == str(version):
            return self.stored[i].revision
        return None

    def as_of(self, version: JournalVersion) -> JournalRevision | None:
        """The newest revision at or before ``version`` (binary search)."""
        i = bisect.bisect_right(self._keys, str(version))
        return self.stored[i - 1].revision if i else None

    def extended(self, stored: Iterable[StoredRevision]) -> ChainSnapshot:
        """A new snapshot with ``stored`` appended after the head."""
        added = tuple(stored)
        return ChainSnapshot(
            self.coordinate, self.stored + added, self._keys + tuple(s.version_key for s in added)
        )


class ChainMap(Mapping[ArtifactCoordinate, ChainSnapshot]):
    """An immutable mapping that shares a large base with its successors.

    An update copies only a small overlay of changed chains on top of the
    shared base (never mutated), so publishing a new view after one append
    does not copy every artifact; once the overlay outgrows a fraction of the
    base it is folded into a fresh base, which keeps lookups two dict probes.
    """

    __slots__ = ("_base", "_overlay")

    def __init__(
        self,
        base: Mapping[ArtifactCoordinate, ChainSnapshot],
        overlay: Mapping[ArtifactCoordinate, ChainSnapshot],
    ) -> None:
        self._base = base
        self._overlay = overlay

    def __getitem__(self, coordinate: ArtifactCoordinate) -> ChainSnapshot:
        found = self._overlay.get(coordinate)
        return self._base[coordinate] if found is None else found

    def __iter__(self) -> Iterator[ArtifactCoordinate]:
        yield from self._overlay
        yield from (c for c in self._base if c not in self._overlay)

    def __len__(self) -> int:
        return len(self._base) + sum(1 for c in self._overlay if c not in self._base)

    def updated(self, changed: Mapping[ArtifactCoordinate, ChainSnapshot]) -> ChainMap:
        """A new mapping with ``changed`` replacing or adding chains."""
        overlay = {**self._overlay, **changed}
        if len(overlay) > 64 and len(overlay) * 8 > len(self._base):
            return ChainMap(MappingProxyType({**self._base, **overlay}), MappingProxyType({}))
        return ChainMap(self._base, MappingProxyType(overlay))


def _updated(
    chains: Mapping[ArtifactCoordinate, ChainSnapshot],
    changed: Mapping[ArtifactCoordinate, ChainSnapshot],
) -> ChainMap:
    if isinstance(chains, ChainMap):
        return chains.updated(changed)
    return ChainMap(MappingProxyType(dict(chains)), MappingProxyType({})).updated(changed)


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
        added: dict[str, list[tuple[_AcceptedEvent, StoredRevision]]] = {}
        position = view.position
        for position, event in events:
            if position <= view.position:
                raise ProjectionIntegrityError(
                    f"notification {position} is not after the projection's {view.position}"
                )
            if isinstance(event, _AcceptedEvent):
                stored = _stored(event, position, parsed or {})
                added.setdefault(event.coordinate, []).append((event, stored))
        if position == view.position:
            return view  # nothing new: keep the published object
        changed: dict[ArtifactCoordinate, ChainSnapshot] = {}
        for name, items in added.items():
            coordinate = ArtifactCoordinate(name)
            current = view.chains.get(coordinate)
            _check_order(current, items)
            new = tuple(stored for _, stored in items)
            changed[coordinate] = (
                ChainSnapshot.of(coordinate, new) if current is None else current.extended(new)
            )
        self._view = JournalWorldview(_updated(view.chains, changed), position)
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


def _stored(
    event: _AcceptedEvent, position: int, parsed: Mapping[str, JournalRevision]
) -> StoredRevision:
    known = parsed.get(event.digest)
    if known is not None and known.text != event.text:
        known = None
    if (
        known is None
        and "sha256:" + hashlib.sha256(event.text.encode()).hexdigest() != event.digest
    ):
        raise ProjectionIntegrityError(
            f"notification {position}: stored text does not digest to its event's "
            f"{event.digest} ({event.coordinate} {event.journal_version})"
        )
    return StoredRevision(
        coordinate=event.coordinate,
        version_key=event.journal_version,
        digest=event.digest,
        text=event.text,
        position=position,
        parsed=known,
    )


def _check_order(
    current: ChainSnapshot | None, items: list[tuple[_AcceptedEvent, StoredRevision]]
) -> None:
    previous = None if current is None else current.stored[-1]
    for event, stored in items:
        predecessor = getattr(event, "predecessor", None)
        if previous is None:
            if predecessor is not None:
                raise ProjectionIntegrityError(f"{event.coordinate}: chain starts without genesis")
        elif predecessor != previous.digest or not previous.version_key < stored.version_key:
            raise ProjectionIntegrityError(
                f"{event.coordinate}: revision {stored.version_key} does not follow "
                f"{previous.version_key}"
            )
        previous = stored
