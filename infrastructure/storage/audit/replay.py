"""Replaying ``storage_events``: the state the log implies, and where it breaks its own rules.

The log is read one log stream at a time (ordered by originator and
version, in pages). Each log stream is one record key, SPI stream or blob,
named by the UUIDv5 of ``kind\\0resource\\0key``; its events must all name
that key, its versions must run 1, 2, 3, ... and its events must follow the
rules the driver writes them by:

- records: ``RecordInserted`` only while no row is live, ``RecordReplaced``
  of a live row at exactly the next revision and with its immutable
  attributes unchanged, ``RecordDeleted`` of a live row carrying its
  revision;
- streams: ``StreamEntryAppended`` at position ``version - base`` with an
  id not already live, ``StreamDeleted`` carrying the live head (its
  version becomes the new base);
- blobs: one live ``BlobPut`` (a put again only after a purge).

A purge (:mod:`~nenjim.infrastructure.storage.purge`) leaves stubs and
markers. A stub counts as the version it holds (a stream's positions count
it) but what it removed contributes nothing: a purged row, entry or blob is
not live. Markers live in a fourth kind of log stream, one per purged key;
every marker is checked against the stubs that name it (their count and
their removal digest), and every stub must name a marker of its key.

Every state must decode into what the resource accepts (attributes,
envelope, Canonical JSON payload). The final live rows must satisfy every
unique constraint.

Notification ids must be unique, and grow with the versions of each log
stream (a version is written only once the one before it has committed, so
it takes a later id). On SQLite they are numbered without gaps (each event
takes ``max + 1`` under the single writer lock), so a gap means events were
removed. PostgreSQL takes them from a sequence, which leaves gaps by design
(a rolled-back insert spends its id): there no stored id may be above the
last value the sequence handed out. An id moved into a gap, keeping both
rules, is an edit no audit can tell from the log as written.

A log stream whose own events are broken (a gap, an undecodable state, a
key mismatch) is *damaged*: it is reported, and the table comparison skips
it, since nothing reliable can be said of what it implies.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nenjim.infrastructure.storage import purge
from nenjim.infrastructure.storage.audit.tables import EVENTS_TABLE
from nenjim.infrastructure.storage.entries import BlobEntry, RecordEntry
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.rules import attributes_match
from nenjim.infrastructure.storage.scalars import validate_revision
from nenjim.infrastructure.storage.sql import codec, events
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.audit_report import Finding

PAGE = 1000

KINDS: Mapping[str, str] = {
    events.RECORD_INSERTED: "records",
    events.RECORD_REPLACED: "records",
    events.RECORD_DELETED: "records",
    events.STREAM_ENTRY_APPENDED: "streams",
    events.STREAM_DELETED: "streams",
    events.BLOB_PUT: "blobs",
}
"""The resource kind each event topic belongs to."""

_STUBBED: Mapping[str, tuple[str, ...]] = {
    "records": events.RECORD_WRITES,
    "streams": (events.STREAM_ENTRY_APPENDED,),
    "blobs": (events.BLOB_PUT,),
}
"""The topics a stub of each kind's log stream may stand for."""

_PURGED_ROW = object()
"""A record revision a purge removed: not live, deletable by its tombstone."""

_KEY_FIELD = {"records": "key", "streams": "stream", "blobs": "key"}
_LOG_STREAM: Mapping[str, Callable[[str, str], uuid.UUID]] = {
    "records": events.record_stream,
    "streams": events.entry_stream,
    "blobs": events.blob_stream,
}

Identity = tuple[str, str, str]
"""``(kind, resource id, key)``: one record key, SPI stream or blob."""


@dataclass(frozen=True, slots=True)
class LiveRecord:
    """A row the log says is live, and the log version that wrote it."""

    entry: RecordEntry
    log_version: int


@dataclass(frozen=True, slots=True)
class LiveStream:
    """An SPI stream as the log leaves it: head, base and the ids of its live entries."""

    head: int
    base: int
    ids: tuple[str, ...]


@dataclass
class ReplayedLog:
    """What the log implies for the inline tables, and the log's own findings."""

    records: dict[tuple[str, str], LiveRecord] = field(default_factory=dict)
    streams: dict[tuple[str, str], LiveStream] = field(default_factory=dict)
    blobs: dict[tuple[str, str], BlobEntry] = field(default_factory=dict)
    last_versions: dict[Identity, int] = field(default_factory=dict)
    """The highest version of every log stream that was replayed."""
    damaged: set[Identity] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)
    events: int = 0


@dataclass(frozen=True, slots=True)
class _Event:
    version: int
    topic: str
    state: dict[str, Any] | None  # None: the stored state is not one its topic can have
    notification_id: Any  # an int, unless edited into another type


def replay_log(session: Session, resources: Mapping[str, Resource]) -> ReplayedLog:
    """Read every event of ``storage_events`` and replay it against ``resources``."""
    replay = _Replay(resources)
    replay.load_markers(session)
    unreadable: list[tuple[Any, Any]] = []
    for originator, stream_events in _log_streams(session, unreadable):
        replay.log_stream(originator, stream_events)
    for originator, version in unreadable:
        replay.result.findings.append(
            Finding(
                "log",
                EVENTS_TABLE,
                None,
                None,
                f"log stream {originator} version {version!r}",
                "the version is not an integer (the row was edited): the event is not read",
            )
        )
    replay.finish()
    replay.notification_ids(session)
    return replay.result


class _Replay:
    def __init__(self, resources: Mapping[str, Resource]) -> None:
        self.resources = resources
        self.result = ReplayedLog()
        self.foreign: Counter[str] = Counter()
        # the markers of every purged key: its log stream -> marker version -> marker
        self.markers: dict[str, dict[int, purge.Purge]] = {}
        self.marked: dict[str, Identity] = {}
        self.checked: set[tuple[str, int]] = set()

    def load_markers(self, session: Session) -> None:
        """Every readable marker, by the log stream of the key it names (checked later)."""
        for originator, version, state in session.all(
            "SELECT originator_id, originator_version, state FROM {events} WHERE topic = ? "
            "ORDER BY originator_id, originator_version",
            (purge.PURGE,),
        ):
            made = _marker(_state(purge.PURGE, state))
            if made is None or type(version) is not int:
                continue
            if str(purge.purge_stream(made.kind, made.resource, made.key)) != str(originator):
                continue
            target = str(_LOG_STREAM[made.kind](made.resource, made.key))
            self.markers.setdefault(target, {})[version] = made
            self.marked[target] = (made.kind, made.resource, made.key)

    # one log stream
    def log_stream(self, originator: str, stream_events: Sequence[_Event]) -> None:
        self.result.events += len(stream_events)
        if any(event.topic == purge.PURGE for event in stream_events):
            self._purges(originator, stream_events)
            return
        identity = self._identity(originator, stream_events)
        if identity is None:
            return
        kind, resource_id, key = identity
        resource = self.resources.get(resource_id)
        if resource is None:
            self.foreign[resource_id] += len(stream_events)
            return
        if resource.kind != kind:
            self._damaged(identity, stream_events[0].version, f"{kind} events on a {resource.kind}")
            return
        self.result.last_versions[identity] = stream_events[-1].version
        self._in_id_order(identity, stream_events)
        self._stubs(originator, identity, stream_events)
        if not self._contiguous(identity, stream_events):
            return
        if kind == "records":
            self._record(resource, key, stream_events)
        elif kind == "streams":
            self._stream(resource, key, stream_events)
        else:
            self._blob(resource, key, stream_events)

    def _identity(self, originator: str, stream_events: Sequence[_Event]) -> Identity | None:
        """The key this log stream belongs to; every event must name it."""
        named: list[tuple[_Event, Identity | None]] = [
            (event, _named(event)) for event in stream_events
        ]
        identity = next(
            (found for _, found in named if found is not None and _owns(originator, found)),
            self.marked.get(originator),
        )
        if identity is None:
            first = stream_events[0]
            self.result.findings.append(
                Finding(
                    "log",
                    EVENTS_TABLE,
                    None,
                    None,
                    f"log stream {originator} version {first.version}",
                    "no event of this log stream names the key it belongs to "
                    "(undecodable states, unknown topics or foreign keys)",
                )
            )
            return None
        for event, found in named:
            if found is None and event.topic == purge.PURGED and event.state is not None:
                continue  # a stub of the SQL logs names no key; its marker does
            if found != identity:
                self._damaged(identity, event.version, _misnamed(event, found))
        return None if identity in self.result.damaged else identity

    def _contiguous(self, identity: Identity, stream_events: Sequence[_Event]) -> bool:
        expected = 1
        for event in stream_events:
            if event.version != expected:
                gap = (
                    f"version {expected}"
                    if event.version == expected + 1
                    else f"versions {expected}..{event.version - 1}"
                )
                self._damaged(identity, event.version, f"{gap} missing before it")
            expected = event.version + 1
        return identity not in self.result.damaged

    # purges
    def _purges(self, originator: str, stream_events: Sequence[_Event]) -> None:
        """A purge log stream: markers only, each naming this log stream's key, versions
        1, 2, 3, ...; each is checked against its stubs with the key's log stream."""
        made = [
            (event, _marker(event.state) if event.topic == purge.PURGE else None)
            for event in stream_events
        ]
        named = next((found for _, found in made if found is not None), None)
        if named is None:
            self._notification(
                f"log stream {originator} version {stream_events[0].version}",
                "purge markers that cannot be decoded",
            )
            return
        identity: Identity = (named.kind, named.resource, named.key)
        resource = self.resources.get(named.resource)
        if resource is None:
            self.foreign[named.resource] += len(stream_events)
            return
        if resource.kind != named.kind:
            self._damaged(
                identity, stream_events[0].version, f"purge of {named.kind} on a {resource.kind}"
            )
        expected = 1
        for event, found in made:
            if found is None:
                what = "not a purge marker" if event.topic != purge.PURGE else "undecodable"
                self._damaged(identity, event.version, f"purge log stream event {what}")
            elif (found.kind, found.resource, found.key) != identity or str(
                purge.purge_stream(found.kind, found.resource, found.key)
            ) != originator:
                self._damaged(
                    identity, event.version, "purge marker of another key's purge log stream"
                )
            if event.version != expected:
                self._damaged(identity, event.version, f"purge marker {expected} missing")
            expected = event.version + 1

    def _stubs(self, originator: str, identity: Identity, stream_events: Sequence[_Event]) -> None:
        """Each stub well formed and naming a marker of its key; each marker of the key
        matching its stubs (their count, their removal digest)."""
        kind = identity[0]
        by_marker: dict[int, list[tuple[int, str, str]]] = {}
        for event in stream_events:
            if event.topic != purge.PURGED:
                continue
            state = event.state or {}
            digest, marker, topic = state.get("digest"), state.get("marker"), state.get("topic")
            if not isinstance(digest, str) or type(marker) is not int:
                self._damaged(identity, event.version, "purge stub without digest and marker")
            elif topic not in _STUBBED[kind]:
                self._damaged(
                    identity,
                    event.version,
                    f"purge stub of topic {topic!r}, not a payload topic of {kind}",
                )
            else:
                by_marker.setdefault(marker, []).append((event.version, topic, digest))
        markers = self.markers.get(originator, {})
        for marker, stubs in sorted(by_marker.items()):
            if marker not in markers:
                self._damaged(
                    identity,
                    stubs[0][0],
                    f"purge stub names marker {marker}; the key's purge log stream has none",
                )
        for marker, made in sorted(markers.items()):
            self.checked.add((originator, marker))
            stubs = by_marker.get(marker, [])
            if len(stubs) != made.events:
                self._damaged(
                    identity,
                    stubs[0][0] if stubs else stream_events[-1].version,
                    f"purge marker {marker} counts {made.events} events; the log holds "
                    f"{len(stubs)} stubs of it",
                )
            elif purge.removal_digest(stubs) != made.digest:
                self._damaged(
                    identity,
                    stubs[0][0],
                    f"purge marker {marker}: its stubs do not match its digest",
                )

    def _in_id_order(self, identity: Identity, stream_events: Sequence[_Event]) -> None:
        """Each version's notification id above the one before it."""
        for before, event in itertools.pairwise(stream_events):
            earlier, later = before.notification_id, event.notification_id
            if type(earlier) is int and type(later) is int and later <= earlier:
                self._log(
                    identity,
                    event.version,
                    f"notification id {later} is not above {earlier} of version "
                    f"{before.version} (a log stream's ids grow with its versions: edited?)",
                )

    # records
    def _record(self, resource: Resource, key: str, stream_events: Sequence[_Event]) -> None:
        identity = ("records", resource.id, key)
        live: RecordEntry | None = None
        purged = False  # the last write was purged: only its tombstone may follow
        version = 0
        for event in stream_events:
            version = event.version
            if event.topic == purge.PURGED:
                live, purged = None, True
                continue
            try:
                if event.topic == events.RECORD_DELETED:
                    revision = _deleted_revision(event.state)
                    problem = None if purged else _deletion_problem(live, revision)
                    live, purged = None, False
                else:
                    entry: RecordEntry = codec.recorded_event(resource, event.state or {})
                    problem = _write_problem(resource, event.topic, live, entry)
                    if purged:
                        problem = f"{_topic_name(event.topic)} after a purged revision "
                        problem += "(no RecordDeleted between)"
                    live, purged = entry, False
            except SerializationError as error:
                self._damaged(identity, version, f"state cannot be decoded: {error}")
                return
            if problem is not None:
                self._log(identity, version, problem)
        if live is not None:
            plain = RecordEntry(live.key, live.revision, live.attributes, live.record)
            self.result.records[(resource.id, key)] = LiveRecord(plain, version)

    # streams
    def _stream(self, resource: Resource, stream: str, stream_events: Sequence[_Event]) -> None:
        identity = ("streams", resource.id, stream)
        base, ids = 0, list[str | None]()  # None: a purged position
        for event in stream_events:
            if event.topic == purge.PURGED:
                ids.append(None)
                continue
            state = event.state or {}
            try:
                if event.topic == events.STREAM_DELETED:
                    head = _checked_int(state, "head")
                    if head != len(ids):
                        self._log(
                            identity,
                            event.version,
                            f"StreamDeleted says head {head}, the stream had {len(ids)} entries",
                        )
                    base, ids = event.version, []
                    continue
                position = _checked_int(state, "position")
                entry = codec.stream_event(position, state)
            except SerializationError as error:
                self._damaged(identity, event.version, f"state cannot be decoded: {error}")
                return
            if position != event.version - base:
                self._log(
                    identity,
                    event.version,
                    f"StreamEntryAppended at position {position}; after base {base} "
                    f"log version {event.version} is position {event.version - base}",
                )
            if entry.id in ids:
                self._log(
                    identity,
                    event.version,
                    f"StreamEntryAppended repeats live entry id {entry.id!r}",
                )
            ids.append(entry.id)
        live = tuple(entry_id for entry_id in ids if entry_id is not None)
        self.result.streams[(resource.id, stream)] = LiveStream(len(ids), base, live)

    # blobs
    def _blob(self, resource: Resource, key: str, stream_events: Sequence[_Event]) -> None:
        identity = ("blobs", resource.id, key)
        blob: BlobEntry | None = None
        for event in stream_events:
            if event.topic == purge.PURGED:
                blob = None
                continue
            if blob is not None:
                self._log(
                    identity,
                    event.version,
                    f"{len(stream_events)} events for one blob (a blob is written once, "
                    "again only after a purge)",
                )
            state = event.state or {}
            try:
                blob = codec.blob_row(resource, key, state["data"], state["attributes"])
            except (KeyError, ValueError, TypeError, SerializationError) as error:
                self._damaged(identity, event.version, f"state cannot be decoded: {error}")
                return
        if blob is not None:
            self.result.blobs[(resource.id, key)] = blob

    # the whole log
    def finish(self) -> None:
        """Checks across log streams: foreign resources, unique constraints of the live rows."""
        for resource_id, count in sorted(self.foreign.items()):
            self.result.findings.append(
                Finding(
                    "log",
                    EVENTS_TABLE,
                    resource_id,
                    None,
                    "events",
                    f"{count} events of a resource that is not in the catalog",
                )
            )
        for target, markers in sorted(self.markers.items()):
            kind, resource_id, key = self.marked[target]
            if resource_id not in self.resources:
                continue  # counted with the foreign resources
            for marker, made in sorted(markers.items()):
                if (target, marker) not in self.checked:
                    self._damaged(
                        (kind, resource_id, key),
                        marker,
                        f"purge marker {marker} counts {made.events} events; the log holds no "
                        f"{kind} log stream of the key",
                    )
        for resource in self.resources.values():
            for constraint in resource.unique:
                self._unique(resource, constraint)

    def _unique(self, resource: Resource, constraint: Mapping[str, Any]) -> None:
        fields, where = constraint["fields"], constraint["where"]
        holders: dict[str, list[str]] = {}
        for (resource_id, key), live in sorted(self.result.records.items()):
            attributes = live.entry.attributes
            if resource_id != resource.id or not attributes_match(attributes, where):
                continue
            if any(attributes[name] is None for name in fields):
                continue  # nulls are distinct
            values = dumps({name: attributes[name] for name in fields})
            holders.setdefault(values, []).append(key)
        for values, keys in holders.items():
            if len(keys) > 1:
                self.result.findings.append(
                    Finding(
                        "log",
                        EVENTS_TABLE,
                        resource.id,
                        None,
                        f"unique {constraint['name']}",
                        f"live rows {', '.join(dumps(k) for k in keys)} all hold {values}",
                    )
                )

    def notification_ids(self, session: Session) -> None:
        """Duplicated ids (both databases); gaps where ids are dense (SQLite); ids the
        sequence never handed out where one numbers them (PostgreSQL)."""
        for notification_id, count in session.all(
            "SELECT notification_id, count(*) FROM {events} GROUP BY notification_id "
            "HAVING count(*) > 1 ORDER BY notification_id"
        ):
            self._notification(f"notification id {notification_id}", f"{count} events share it")
        if session.dialect.notification_id_sequence is not None:
            self._sequence(session, session.dialect.notification_id_sequence)
        if not session.dialect.dense_notification_ids:
            return
        for start, end in session.all(
            "SELECT coalesce((SELECT max(p.notification_id) FROM {events} p "
            "WHERE p.notification_id < e.notification_id), 0) + 1, e.notification_id - 1 "
            "FROM {events} e WHERE NOT EXISTS (SELECT 1 FROM {events} q "
            "WHERE q.notification_id = e.notification_id - 1) AND e.notification_id <> 1 "
            "ORDER BY e.notification_id"
        ):
            ids = f"notification id {start}" if start == end else f"notification ids {start}..{end}"
            self._notification(ids, "missing (SQLite numbers events without gaps: removed?)")

    def _sequence(self, session: Session, query: str) -> None:
        found = session.one(query, (session.dialect.tables["events"],))
        assert found is not None  # one row, whatever the tables hold
        has_sequence, last, top = found
        if not has_sequence:
            self._notification(
                "notification_id", "takes its values from no sequence: writers cannot number events"
            )
        elif top is not None and (last is None or top > last):
            handed = "none yet" if last is None else f"up to {last}"
            self._notification(
                f"notification id {top}",
                f"above the ids its sequence handed out ({handed}): an id was edited",
            )

    def _notification(self, where: str, problem: str) -> None:
        self.result.findings.append(Finding("log", EVENTS_TABLE, None, None, where, problem))

    def _log(self, identity: Identity, version: int, problem: str) -> None:
        _, resource_id, key = identity
        self.result.findings.append(
            Finding("log", EVENTS_TABLE, resource_id, key, f"version {version}", problem)
        )

    def _damaged(self, identity: Identity, version: int, problem: str) -> None:
        self._log(identity, version, problem)
        self.result.damaged.add(identity)


def _log_streams(
    session: Session, unreadable: list[tuple[Any, Any]]
) -> Iterator[tuple[str, list[_Event]]]:
    """Each log stream's events in version order, reading ``storage_events`` in pages; a
    row whose version is not an integer (SQLite lets a column hold any type) is left out
    and added to ``unreadable``."""
    current: Any = None
    collected: list[_Event] = []
    for originator, version, topic, state, notification_id in _event_rows(session):
        if type(version) is not int:
            unreadable.append((originator, version))
            continue
        if collected and originator != current:
            yield str(current), collected
            collected = []
        current = originator
        collected.append(_Event(version, str(topic), _state(str(topic), state), notification_id))
    if collected:
        yield str(current), collected


def _event_rows(session: Session) -> Iterator[tuple[Any, ...]]:
    columns = (
        "SELECT originator_id, originator_version, topic, state, notification_id FROM {events}"
    )
    order = " ORDER BY originator_id, originator_version LIMIT ?"
    rows = session.all(columns + order, (PAGE,))
    while rows:
        yield from rows
        if len(rows) < PAGE:
            return
        last = rows[-1]
        rows = session.all(
            columns + " WHERE (originator_id, originator_version) > (?, ?)" + order,
            (last[0], last[1], PAGE),
        )


def _state(topic: str, raw: Any) -> dict[str, Any] | None:
    try:
        return events.decode_event(topic, raw)
    except (SerializationError, TypeError):
        return None


def _marker(state: Mapping[str, Any] | None) -> purge.Purge | None:
    """The marker a state describes, if it decodes into one of a known kind."""
    try:
        made = purge.marker_of(state or {})
    except (KeyError, TypeError, ValueError):
        return None
    return made if made.kind in _LOG_STREAM else None


def _named(event: _Event) -> Identity | None:
    """The key an event's state names, if its topic is known and the state says."""
    if event.topic == purge.PURGED and event.state is not None:
        # the memory log's stubs name their key; the SQL logs' do not
        kind = event.state.get("kind")
        if kind not in _KEY_FIELD:
            return None
        resource_id, key = event.state.get("resource"), event.state.get("key")
        if not isinstance(resource_id, str) or not isinstance(key, str):
            return None
        return str(kind), resource_id, key
    kind = KINDS.get(event.topic)
    if kind is None or event.state is None:
        return None
    resource_id, key = event.state.get("resource"), event.state.get(_KEY_FIELD[kind])
    if not isinstance(resource_id, str) or not isinstance(key, str):
        return None
    return kind, resource_id, key


def _owns(originator: str, identity: Identity) -> bool:
    kind, resource_id, key = identity
    return str(_LOG_STREAM[kind](resource_id, key)) == originator


def _misnamed(event: _Event, found: Identity | None) -> str:
    if event.topic not in KINDS:
        return f"unknown topic {event.topic!r}"
    if event.state is None:
        return f"{_topic_name(event.topic)} state is not a JSON object"
    if found is None:
        return f"{_topic_name(event.topic)} state names no resource and key"
    kind, resource_id, key = found
    return (
        f"{_topic_name(event.topic)} names {kind} {resource_id}[{dumps(key)}] of another log stream"
    )


def _topic_name(topic: str) -> str:
    return topic.rpartition(":")[2]


def _write_problem(
    resource: Resource, topic: str, live: RecordEntry | None, entry: RecordEntry
) -> str | None:
    if topic == events.RECORD_INSERTED:
        if live is not None:
            return (
                f"RecordInserted over a live row at revision {live.revision} "
                "(no RecordDeleted before it)"
            )
        return None
    if live is None:
        return "RecordReplaced of a row that is not live"
    if entry.revision != live.revision + 1:
        return (
            f"RecordReplaced to revision {entry.revision} from revision {live.revision} "
            "(a replace advances the revision by one)"
        )
    changed = [
        name
        for name in resource.immutable_attributes
        if not attributes_match(live.attributes, {name: entry.attributes[name]})
    ]
    if changed:
        return f"RecordReplaced changes immutable attributes {changed}"
    return None


def _deletion_problem(live: RecordEntry | None, revision: int) -> str | None:
    if live is None:
        return "RecordDeleted of a row that is not live"
    if revision != live.revision:
        return f"RecordDeleted at revision {revision}; the row was at revision {live.revision}"
    return None


def _deleted_revision(state: Mapping[str, Any] | None) -> int:
    return _checked_int(state or {}, "revision")


def _checked_int(state: Mapping[str, Any], name: str) -> int:
    try:
        return validate_revision(state[name], name)
    except (KeyError, TypeError, ValueError) as error:
        raise SerializationError(f"{name}: {error!r}") from None
