"""Immutable chain snapshots with an as-of index, built from accepted-revision events.

The projection folds ``JournalChain`` events, in notification-log order, into
a :class:`JournalWorldview`: per artifact a :class:`ChainSnapshot` whose
revisions ascend by Journal version, and whose as-of lookup is a binary
search over the version keys. Every update builds a new worldview and
leaves the old one untouched, so a reader holding one never sees it change.

Folding checks every event against the log and its chain, cheaply, and
refuses a log that contradicts itself (:class:`ProjectionIntegrityError`,
a one-line ``JournalError``): notification ids follow each other without a
gap; only the two chain events, with exactly their fields, are accepted
(the topic is checked before anything is imported); an event sits on its
artifact's stream at the next stream position; a chain starts with one
genesis and each successor names the previous head and a later Journal
version; the text's SHA-256 is the event's digest. It does not parse the
text: a revision is parsed on first use and kept (and checked then against
its event). Revisions the writer had just parsed are handed over, so they
are never parsed twice. A fold into a view therefore costs a digest per
event, not a parse; a rebuild of the persisted rows (``ChainFold.add_row``)
holds no text and leaves the digest to the first read of each text.
"""

from __future__ import annotations

import bisect
import hashlib
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.utils import get_topic

from nenjim.domain.journal.chain import CHAIN_TOPICS, JournalChain, chain_id
from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.errors import InvalidValueError, JournalError, JournalIntegrityError
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, JournalVersion

_AcceptedEvent = JournalChain.GenesisAccepted | JournalChain.SuccessorAccepted
_COMMON_FIELDS = frozenset(
    {"originator_id", "originator_version", "timestamp", "coordinate", "journal_version"}
    | {"digest", "text"}
)
_FIELDS: dict[type, frozenset[str]] = {
    JournalChain.GenesisAccepted: _COMMON_FIELDS | {"originator_topic"},
    JournalChain.SuccessorAccepted: _COMMON_FIELDS | {"predecessor"},
}
_TEXT_FIELDS: dict[type, tuple[str, ...]] = {
    kind: tuple(sorted(fields - {"originator_id", "originator_version", "timestamp"}))
    for kind, fields in _FIELDS.items()
}
KnownTexts = Mapping[str, JournalRevision | str]
"""Revisions a writer just checked, by digest: parsed, or only their text (not parsed again).

An entry saves the fold a digest (and a parse) only when its text is exactly
the event's, so it changes nothing but the work done.
"""
# The fixed-width form keeps string order chronological; the calendar is
# checked when the text is parsed (the audit parses every text).
_VERSION_SHAPE = re.compile(r"[0-9]{8}T[0-9]{6}Z")


class ProjectionIntegrityError(JournalIntegrityError):
    """An event in the log contradicts the log or its chain (an edited or corrupt log)."""


class LoggedRevision(NamedTuple):
    """What the log's event at a position says of its revision: its row and its text."""

    coordinate: str
    version_key: str
    digest: str
    text: str


class StoredRevision:
    """One accepted revision as the log holds it; its text read and parsed once, on first use.

    A revision folded from the log holds its text; one loaded from a
    persisted projection holds only its position, digest and version, and
    ``load_text`` reads its event from the log when first needed (checked
    then: the event must say what the row says, and its text digest to it).
    """

    __slots__ = ("_load", "_parsed", "_text", "coordinate", "digest", "position", "version_key")

    def __init__(
        self,
        *,
        coordinate: str,
        version_key: str,
        digest: str,
        text: str | None,
        position: int,
        parsed: JournalRevision | None = None,
        load_text: Callable[[int], LoggedRevision] | None = None,
    ) -> None:
        self.coordinate = coordinate
        self.version_key = version_key
        self.digest = digest
        self._text: str | bytes | None = text
        self.position = position
        self._parsed = parsed
        self._load = load_text

    @property
    def text(self) -> str:
        """The revision's exact text (read from the log on first use if not held)."""
        text = self._text
        if isinstance(text, bytes):
            # Adopted file bytes (see adopt_bytes): one read of the slot, so a thread
            # racing this one decodes the same bytes or finds their text.
            text = self._text = text.decode()
        elif text is None:
            if self._load is None:
                raise ProjectionIntegrityError(
                    f"notification {self.position}: no text for {self.coordinate} "
                    f"{self.version_key}"
                )
            logged = self._load(self.position)
            row = (self.coordinate, self.version_key, self.digest)
            if logged[:3] != row:
                raise ProjectionIntegrityError(
                    f"notification {self.position}: the persisted chain projection says "
                    f"{' '.join(row)}; its event says {' '.join(logged[:3])}"
                )
            text = logged.text
            if _digest(text) != self.digest:
                raise ProjectionIntegrityError(
                    f"notification {self.position} ({self.coordinate} {self.version_key}): "
                    f"stored text does not digest to its event's {self.digest}"
                )
            self._text = text
        return text

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[tuple[int, str, str, str]],
        load_text: Callable[[int], LoggedRevision],
    ) -> list[StoredRevision]:
        """Revisions of persisted rows ``(position, coordinate, version key, digest)``,
        holding no text: ``load_text`` reads each one's event when its text is first needed.

        Slots set directly: a start builds one per accepted revision, and a call with
        keywords each would cost four times as much.
        """
        new = object.__new__
        built = []
        for position, coordinate, version_key, digest in rows:
            stored = new(cls)
            stored.coordinate = coordinate
            stored.version_key = version_key
            stored.digest = digest
            stored._text = None
            stored.position = position
            stored._parsed = None
            stored._load = load_text
            built.append(stored)
        return built

    def adopt_bytes(self, data: bytes) -> None:
        """Hold ``data``, file bytes whose digest the caller found equal to this
        revision's, so the log is not read for its text.

        The text is decoded from them when first needed: a warm restart compares
        10,000s of files and decodes none. Bytes with this revision's digest are an
        accepted text's, valid UTF-8 without a byte-order mark.
        """
        if self._text is None:
            self._text = data
            self._load = None

    def settle(self) -> None:
        """Read the text now if it is not held, then forget how to read it: a settled
        revision reaches nothing of the log."""
        if self._load is not None:
            _ = self.text
            self._load = None

    @property
    def revision(self) -> JournalRevision:
        """The parsed revision (parsed on first use; the same object afterwards)."""
        parsed = self._parsed
        if parsed is None:
            try:
                parsed = parse_journal(self.text)
            except JournalError as error:
                raise ProjectionIntegrityError(
                    f"notification {self.position}: the stored text of {self.coordinate} "
                    f"{self.version_key} does not parse: {error}"
                ) from error
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
        """Index ``stored`` (already in ascending version order).

        Fields set directly: a start builds one snapshot per artifact.
        """
        snapshot = _new(cls)
        _set_coordinate(snapshot, coordinate)
        _set_stored(snapshot, stored)
        _set_keys(snapshot, tuple(map(_VERSION_KEY, stored)))
        return snapshot

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

    @property
    def version_keys(self) -> tuple[str, ...]:
        """The Journal versions of :attr:`stored`, as text, in the same order."""
        return self._keys

    def digest_at(self, version: JournalVersion) -> str | None:
        """The digest accepted at exactly ``version`` (no parsing)."""
        stored = self.stored_at(version)
        return None if stored is None else stored.digest

    def stored_at(self, version: JournalVersion) -> StoredRevision | None:
        """The revision accepted at exactly ``version``, as stored (no parsing)."""
        key = str(version)
        i = bisect.bisect_left(self._keys, key)
        return self.stored[i] if i < len(self._keys) and self._keys[i] == key else None

    def exact(self, version: JournalVersion) -> JournalRevision | None:
        """The revision at exactly ``version``."""
        i = bisect.bisect_left(self._keys, str(version))
        if i < len(self._keys) and self._keys[i] == str(version):
            return self.stored[i].revision
        return None

    def as_of(self, version: JournalVersion) -> JournalRevision | None:
        """The newest revision at or before ``version`` (binary search)."""
        return self.as_of_key(str(version))

    def as_of_key(self, key: str) -> JournalRevision | None:
        """:meth:`as_of` for a version's canonical text (as :attr:`version_keys` holds
        them), so a query given text builds no ``JournalVersion``. The caller checks
        ``key`` (:meth:`JournalVersion.text_of`): any other text only compares as text.
        """
        i = bisect.bisect_right(self._keys, key)
        return self.stored[i - 1].revision if i else None

    def extended(self, stored: Iterable[StoredRevision]) -> ChainSnapshot:
        """A new snapshot with ``stored`` appended after the head."""
        added = tuple(stored)
        return ChainSnapshot(
            self.coordinate, self.stored + added, self._keys + tuple(map(_VERSION_KEY, added))
        )


# A snapshot's slots' own setters, for ChainSnapshot.of: past the frozen dataclass's
# guard, without object.__setattr__'s lookup of each name.
_new = object.__new__
_set_coordinate = ChainSnapshot.__dict__["coordinate"].__set__
_set_stored = ChainSnapshot.__dict__["stored"].__set__
_set_keys = ChainSnapshot.__dict__["_keys"].__set__
_VERSION_KEY = operator.attrgetter("version_key")


class ChainMap(Mapping[ArtifactCoordinate, ChainSnapshot]):
    """An immutable mapping that shares a large base with its successors.

    An update copies only a small overlay of changed chains on top of the
    shared base (never mutated), so publishing a new view after one append
    does not copy every artifact; once the overlay outgrows a fraction of the
    base it is folded into a fresh base, which keeps lookups two dict probes.
    Base and overlay each have a twin keyed by coordinate text, for :meth:`named`.
    """

    __slots__ = ("_base", "_base_names", "_overlay", "_overlay_names")

    def __init__(
        self,
        base: Mapping[ArtifactCoordinate, ChainSnapshot],
        overlay: Mapping[ArtifactCoordinate, ChainSnapshot],
    ) -> None:
        # Private copies held as plain dicts, never changed: copying a dict into the
        # next overlay is one C call (a mapping proxy is copied key by key).
        self._base = dict(base)
        self._overlay = dict(overlay)
        self._base_names = _by_name(self._base)
        self._overlay_names = _by_name(self._overlay)

    @classmethod
    def _of(
        cls,
        base: dict[ArtifactCoordinate, ChainSnapshot],
        overlay: dict[ArtifactCoordinate, ChainSnapshot],
        base_names: dict[str, ChainSnapshot],
        overlay_names: dict[str, ChainSnapshot],
    ) -> ChainMap:
        """A mapping over dicts nobody else holds (not copied again), with their twins by name."""
        chains = cls.__new__(cls)
        chains._base, chains._overlay = base, overlay
        chains._base_names, chains._overlay_names = base_names, overlay_names
        return chains

    def __getitem__(self, coordinate: ArtifactCoordinate) -> ChainSnapshot:
        found = self._overlay.get(coordinate)
        return self._base[coordinate] if found is None else found

    def get(  # type: ignore[override]  # Mapping.get's overloads, one signature
        self, coordinate: ArtifactCoordinate, default: ChainSnapshot | None = None
    ) -> ChainSnapshot | None:
        found = self._overlay.get(coordinate)
        return self._base.get(coordinate, default) if found is None else found

    def named(self, name: str) -> ChainSnapshot | None:
        """The chain of the coordinate whose text is ``name``, or ``None`` (also for a
        text that is no coordinate): two dict probes, and no ``ArtifactCoordinate`` built."""
        found = self._overlay_names.get(name)
        return self._base_names.get(name) if found is None else found

    def __contains__(self, coordinate: object) -> bool:
        return coordinate in self._overlay or coordinate in self._base

    def values(self) -> ValuesView[ChainSnapshot]:
        # Without an overlay (a view loaded or folded in bulk), the base's own values, in
        # the order of iteration: the mixin would look every key up again.
        if not self._overlay:
            return self._base.values()
        return super().values()

    def __iter__(self) -> Iterator[ArtifactCoordinate]:
        yield from self._overlay
        yield from (c for c in self._base if c not in self._overlay)

    def __len__(self) -> int:
        return len(self._base) + sum(1 for c in self._overlay if c not in self._base)

    def updated(self, changed: Mapping[ArtifactCoordinate, ChainSnapshot]) -> ChainMap:
        """A new mapping with ``changed`` replacing or adding chains."""
        overlay = {**self._overlay, **changed}
        overlay_names = {**self._overlay_names, **_by_name(changed)}
        if len(overlay) > 64 and len(overlay) * 8 > len(self._base):
            return ChainMap._of(
                {**self._base, **overlay}, {}, {**self._base_names, **overlay_names}, {}
            )
        return ChainMap._of(self._base, overlay, self._base_names, overlay_names)


def _by_name(chains: Mapping[ArtifactCoordinate, ChainSnapshot]) -> dict[str, ChainSnapshot]:
    return {str(coordinate): chain for coordinate, chain in chains.items()}


def _updated(
    chains: Mapping[ArtifactCoordinate, ChainSnapshot],
    changed: Mapping[ArtifactCoordinate, ChainSnapshot],
) -> ChainMap:
    if isinstance(chains, ChainMap):
        return chains.updated(changed)
    return ChainMap(chains, {}).updated(changed)


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

    def chain_named(self, name: str) -> ChainSnapshot | None:
        """The snapshot of the artifact whose coordinate text is ``name``, or ``None``
        (also for a text that is no coordinate); see :meth:`ChainMap.named`."""
        chains = self.chains
        if isinstance(chains, ChainMap):
            return chains.named(name)
        # A view built over another mapping (the empty view's) has no index by name.
        try:
            coordinate = ArtifactCoordinate(name)
        except InvalidValueError:
            return None
        return chains.get(coordinate)

    def settle(self) -> JournalWorldview:
        """Every revision settled (:meth:`StoredRevision.settle`): the view, published,
        reaches nothing of the log. Returns the view."""
        for chain in self.chains.values():
            for stored in chain.stored:
                stored.settle()
        return self


class JournalChainsProjection:
    """Folds ``JournalChain`` events into successive immutable worldviews.

    It also keeps every revision in log order (the log numbers the Journal's
    events 1, 2, 3, ... without gaps, so revision ``n`` is at index ``n - 1``),
    for :meth:`revisions_after`: what a persisted copy lacks.
    """

    def __init__(self) -> None:
        self._view = JournalWorldview.empty()
        self._ordered: list[StoredRevision] = []
        # A loaded copy's revisions read their texts through the log that loaded them:
        # such a view is never shared (that log may be closed before its sharers are).
        self._loaded = False

    @property
    def view(self) -> JournalWorldview:
        """The latest worldview."""
        return self._view

    def revisions_after(self, position: int) -> list[StoredRevision]:
        """Every revision of :attr:`view` after ``position``, in log order."""
        return self._ordered[position : self._view.position]

    def load(self, revisions: list[StoredRevision]) -> JournalWorldview:
        """Start from revisions read back from a persisted copy, in log order (an empty
        projection only); they are trusted as the fold wrote them."""
        if self._view.position:
            raise RuntimeError("a projection loads a persisted copy only when empty")
        if [r.position for r in revisions[:1] + revisions[-1:]] not in ([], [1, len(revisions)]):
            raise ProjectionIntegrityError(
                "persisted chain projection: its positions are not 1 to its row count"
            )
        grouped: dict[str, list[StoredRevision]] = {}
        for revision in revisions:
            grouped.setdefault(revision.coordinate, []).append(revision)
        chains = {}
        for name, stored in grouped.items():
            coordinate = ArtifactCoordinate(name)
            chains[coordinate] = ChainSnapshot.of(coordinate, tuple(stored))
        self._view = JournalWorldview(_updated(MappingProxyType({}), chains), len(revisions))
        self._ordered = list(revisions)
        self._loaded = True
        return self._view

    def apply(
        self,
        events: Iterable[tuple[int, DomainEventProtocol[UUID]]],
        parsed: KnownTexts | None = None,
    ) -> JournalWorldview:
        """Fold ``(notification id, event)`` pairs, in log order, into a new view.

        The new view becomes :attr:`view` only if every event applied.
        ``parsed`` may offer revisions the writer checked (see :data:`KnownTexts`).
        """
        fold = ChainFold(self._view, parsed)
        added = [fold.add(position, event) for position, event in events]
        self._view = fold.view()
        self._ordered.extend(added)
        return self._view

    def shareable(self) -> SharedView | None:
        """:attr:`view` as another projection of this process may take it up (see
        :meth:`adopt`), or ``None``: a projection that loaded a persisted copy never
        shares (its revisions read their texts through the log that loaded them, which
        may be closed before its sharers are)."""
        if self._loaded or not self._view.position:
            return None
        return SharedView(self._view, self._ordered)

    def adopt(self, position: int, value: object) -> bool:
        """Start from ``value``, a view of the same log up to ``position`` that another
        projection shared (:meth:`shareable`); whether it was one."""
        start = self._view.position
        if not isinstance(value, SharedView) or value.view.position != position:
            return False
        self._ordered.extend(value.ordered[start:position])
        self._view = value.view
        return True


@dataclass(frozen=True, slots=True)
class SharedView:
    """A projection's view of a log, and its revisions in log order (a list that only
    grows: its first ``view.position`` entries are the view's)."""

    view: JournalWorldview
    ordered: list[StoredRevision]


class ChainFold:
    """Checks events one at a time, in log order, against a view and the events before.

    :meth:`add` raises :class:`ProjectionIntegrityError` for the first event
    that contradicts the log or its chain; :meth:`view` is everything added.
    A rebuild that writes rows, not a view, uses :meth:`add_row` with
    ``keep=False``: only each chain's head is kept, no text is held, and the
    text's digest is not computed (the row keeps the event's digest, and a
    text read back for a row is checked against it when first needed).
    """

    def __init__(
        self,
        view: JournalWorldview,
        parsed: KnownTexts | None = None,
        *,
        keep: bool = True,
    ) -> None:
        self._base = view
        self._parsed = parsed or {}
        self._position = view.position
        self._keep = keep
        self._added: dict[str, list[StoredRevision]] = {}
        # Per artifact: revisions so far, and the head's version and digest.
        self._heads: dict[str, tuple[int, str, str]] = {}
        # Per artifact: its coordinate, its stream's id, and its chain in the view.
        self._streams: dict[str, tuple[ArtifactCoordinate, UUID, ChainSnapshot | None]] = {}

    def add(self, position: int, event: object) -> StoredRevision:
        """Check one event against the chains so far and fold it; its stored revision."""
        if not self._keep:
            raise RuntimeError("a fold that keeps only the heads takes rows (add_row)")
        accepted = self._accept(position, event)
        stored = _stored(accepted, position, self._parsed)
        self._added.setdefault(accepted.coordinate, []).append(stored)
        return stored

    def add_row(self, position: int, event: object) -> tuple[int, str, str, str]:
        """Check one event as :meth:`add` does, except its text's digest; its row
        ``(position, coordinate, journal version, digest)``."""
        accepted = self._accept(position, event)
        return (position, accepted.coordinate, accepted.journal_version, accepted.digest)

    def _accept(self, position: int, event: object) -> _AcceptedEvent:
        if position != self._position + 1:
            raise ProjectionIntegrityError(
                f"notification {position} follows notification {self._position}: "
                "notification ids have no gaps"
            )
        accepted = _checked_shape(position, event)
        name = accepted.coordinate
        known = self._heads.get(name)
        streams = self._streams.get(name) or self._stream(position, accepted)
        if accepted.originator_id != streams[1]:
            raise ProjectionIntegrityError(
                f"{_where(position, accepted)}: stored on another artifact's stream"
            )
        if known is None:
            chain = streams[2]
            if chain is None:
                known = (0, "", "")
            else:
                head = chain.stored[-1]
                known = (len(chain.stored), head.version_key, head.digest)
        length = known[0]
        if accepted.originator_version != length + 1:
            raise ProjectionIntegrityError(
                f"{_where(position, accepted)}: stream position "
                f"{accepted.originator_version}, expected {length + 1}"
            )
        _check_link(position, accepted, known)
        self._heads[name] = (length + 1, accepted.journal_version, accepted.digest)
        self._position = position
        return accepted

    @property
    def artifacts(self) -> int:
        """How many artifacts the added events belong to."""
        return len(self._heads)

    def view(self) -> JournalWorldview:
        """The view with every added event; the starting view itself if none was."""
        if not self._keep:
            raise RuntimeError("a fold that keeps only the heads has no view")
        if self._position == self._base.position:
            return self._base  # nothing new: keep the published object
        changed: dict[ArtifactCoordinate, ChainSnapshot] = {}
        for name, new in self._added.items():
            coordinate = self._streams[name][0]
            current = self._base.chains.get(coordinate)
            stored = tuple(new)
            changed[coordinate] = (
                ChainSnapshot.of(coordinate, stored)
                if current is None
                else current.extended(stored)
            )
        return JournalWorldview(_updated(self._base.chains, changed), self._position)

    def _stream(
        self, position: int, event: _AcceptedEvent
    ) -> tuple[ArtifactCoordinate, UUID, ChainSnapshot | None]:
        """The artifact an event names, the id of its stream, and its chain in the view
        (found by the coordinate's text: an artifact the view holds needs no new value)."""
        name = event.coordinate
        known = self._streams.get(name)
        if known is None:
            chain = self._base.chain_named(name)
            if chain is not None:
                coordinate = chain.coordinate
            else:
                try:
                    coordinate = ArtifactCoordinate(name)
                except InvalidValueError as error:
                    raise ProjectionIntegrityError(
                        f"{_where(position, event)}: {error.detail}"
                    ) from error
            known = self._streams[name] = (coordinate, chain_id(name), chain)
        return known


def _checked_shape(position: int, event: object) -> _AcceptedEvent:
    """``event`` if it is a chain event with exactly its fields, each of its type."""
    kind = type(event)
    expected = _FIELDS.get(kind)
    if expected is None:
        raise ProjectionIntegrityError(
            f"notification {position}: unexpected event {get_topic(kind)}"
        )
    state: dict[str, Any] = vars(event)
    if state.keys() != expected:
        raise ProjectionIntegrityError(
            f"notification {position}: {kind.__name__} with fields {sorted(state)}, "
            f"expected {sorted(expected)}"
        )
    texts = _TEXT_FIELDS[kind]
    typed = isinstance(state["timestamp"], datetime)
    for name in texts:  # a loop, not all(...): this runs once per event of a rebuild
        typed = typed and isinstance(state[name], str)
    if not typed:
        wrong = sorted(name for name in texts if not isinstance(state[name], str))
        raise ProjectionIntegrityError(
            f"notification {position}: {kind.__name__} fields of the wrong type: "
            f"{wrong or ['timestamp']}"
        )
    if not _VERSION_SHAPE.fullmatch(state["journal_version"]):
        raise ProjectionIntegrityError(
            f"notification {position}: journal version {state['journal_version']!r} "
            "is not YYYYMMDDTHHMMSSZ"
        )
    assert isinstance(event, _AcceptedEvent)
    return event


def _where(position: int, event: _AcceptedEvent) -> str:
    """An event as error messages name it (built only for an error)."""
    return f"notification {position} ({event.coordinate} {event.journal_version})"


def _check_link(position: int, event: _AcceptedEvent, head: tuple[int, str, str]) -> None:
    """A genesis starts a chain; a successor follows the head with a later version."""
    length, head_version, head_digest = head
    if isinstance(event, JournalChain.GenesisAccepted):
        if length:
            raise ProjectionIntegrityError(
                f"{_where(position, event)}: a second genesis (head {head_version})"
            )
        if event.originator_topic not in CHAIN_TOPICS:
            raise ProjectionIntegrityError(
                f"{_where(position, event)}: genesis of {event.originator_topic!r}, "
                f"expected {JournalChain.TOPIC!r}"
            )
        return
    if not length:
        raise ProjectionIntegrityError(f"{_where(position, event)}: chain starts without genesis")
    if event.predecessor != head_digest or not head_version < event.journal_version:
        raise ProjectionIntegrityError(
            f"{_where(position, event)}: revision {event.journal_version} "
            f"does not follow {head_version}"
        )


def _stored(event: _AcceptedEvent, position: int, parsed: KnownTexts) -> StoredRevision:
    known = parsed.get(event.digest)
    revision = known if isinstance(known, JournalRevision) else None
    if known is not None and (known if revision is None else revision.text) != event.text:
        known = revision = None
    if known is None and _digest(event.text) != event.digest:
        raise ProjectionIntegrityError(
            f"notification {position} ({event.coordinate} {event.journal_version}): "
            f"stored text does not digest to its event's {event.digest}"
        )
    return StoredRevision(
        coordinate=event.coordinate,
        version_key=event.journal_version,
        digest=event.digest,
        text=event.text,
        position=position,
        parsed=revision,
    )


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
