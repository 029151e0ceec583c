"""``InMemoryBackend``: the reference driver, one lock and an undo log for savepoints.

Every outermost transaction (including each root-view operation's own) takes
one lock over all resources. Every change made inside it records how to undo
it; a transaction or savepoint remembers where the undo log stood when it
began, and a rollback undoes back to there. Entries are immutable, so undoing
puts back a container slot or a list length. A transaction costs the size of
its own changes, never the size of the store. Record history is kept as an
append-only list per key, and every write as an event of an append-only log
(the topics and states of ``storage_events``), which followers read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nenjim.infrastructure.memory import KIND
from nenjim.infrastructure.storage import purge
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.conditions import _Unchecked
from nenjim.infrastructure.storage.driver import AttributeValues, StorageDriver
from nenjim.infrastructure.storage.entries import (
    AppendEntry,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from nenjim.infrastructure.storage.errors import (
    BlobConflictError,
    ConflictError,
    NotFoundError,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.purge import Purge
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.rules import (
    attributes_match,
    check_preconditions,
    find_unique_violation,
)
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.store.urls import StoreLocation

_MISSING = object()
"""The previous value of a dictionary slot that was empty."""


@dataclass
class _State:
    records: dict[str, dict[str, RecordEntry]] = field(default_factory=dict)
    history: dict[str, dict[str, list[RecordedEntry]]] = field(default_factory=dict)
    # A position purged while its stream lives holds None.
    streams: dict[str, dict[str, list[StreamEntry | None]]] = field(default_factory=dict)
    # The entry ids of each live stream (id -> position), so an append checks its ids
    # without reading the stream.
    stream_ids: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    blobs: dict[str, dict[str, BlobEntry]] = field(default_factory=dict)
    # Append-only, so a savepoint remembers its length.
    # A state is kept as its write made it (JSON text or a dict); readers get dicts.
    log: list[tuple[str, str | bytes | dict[str, Any]]] = field(default_factory=list)
    # Since the outermost transaction began: (dict, key, previous value or
    # _MISSING) for a slot written or removed, (list, length, None) for a list
    # extended, (list, (index,), previous value) for a list slot written.
    # Containers that writes create empty are left on rollback: an empty one
    # reads as a missing one.
    undo: list[tuple[Any, Any, Any]] = field(default_factory=list)

    def mark(self) -> tuple[int, int]:
        """Where a savepoint begins: the lengths of the undo log and of the event log."""
        return len(self.undo), len(self.log)

    def restore(self, mark: tuple[int, int]) -> None:
        """Undo every change made since ``mark``, latest first."""
        undo_length, log_length = mark
        undo = self.undo
        while len(undo) > undo_length:
            container, key, previous = undo.pop()
            if isinstance(container, list) and isinstance(key, tuple):
                container[key[0]] = previous
            elif isinstance(container, list):
                del container[key:]
            elif previous is _MISSING:
                del container[key]
            else:
                container[key] = previous
        del self.log[log_length:]

    def put(self, mapping: dict[str, Any], key: str, value: object) -> None:
        """``mapping[key] = value``, undoably."""
        self.undo.append((mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def remove(self, mapping: dict[str, Any], key: str) -> Any:
        """``mapping.pop(key)``, undoably (the key must be there)."""
        previous = mapping.pop(key)
        self.undo.append((mapping, key, previous))
        return previous

    def set_at(self, items: list[Any], index: int, value: object) -> None:
        """``items[index] = value``, undoably."""
        self.undo.append((items, (index,), items[index]))
        items[index] = value

    def extend(self, items: list[Any], added: Sequence[Any]) -> None:
        """``items.extend(added)``, undoably."""
        self.undo.append((items, len(items), None))
        items.extend(added)


class InMemoryDriver(StorageDriver[_State]):
    """All resources in process memory under one reentrant lock."""

    kind = KIND.name

    def __init__(self) -> None:
        # Taken by the outermost scope only (a savepoint runs inside it). A plain
        # lock, not a reentrant one: a scope refused for closing on another thread
        # is still rolled back there, and must release the lock there.
        self._lock = threading.Lock()
        self._state = _State()

    @contextmanager
    def transaction(self, outer: _State | None) -> Iterator[_State]:
        if outer is not None:
            with self._savepoint() as state:
                yield state
            return
        with self._lock:
            try:
                with self._savepoint() as state:
                    yield state
            finally:
                # Committed or rolled back: nothing before this point is undone any more.
                self._state.undo.clear()

    @contextmanager
    def _savepoint(self) -> Iterator[_State]:
        mark = self._state.mark()
        try:
            yield self._state
        except BaseException:
            self._state.restore(mark)
            raise

    def log_after(self, after: int, limit: int) -> list[tuple[int, str, dict[str, Any]]]:
        """Up to ``limit`` committed events after the ``after``-th, numbered from 1.

        Takes the store's lock: never call it inside a transaction.
        """
        with self._lock:
            page = self._state.log[after : after + limit]
        return [
            (after + offset, topic, _state_of(state))
            for offset, (topic, state) in enumerate(page, 1)
        ]

    def log_length(self) -> int:
        """How many events are committed (takes the store's lock)."""
        with self._lock:
            return len(self._state.log)

    # records
    def _rows(self, ctx: _State, resource: Resource) -> dict[str, RecordEntry]:
        return ctx.records.setdefault(resource.id, {})

    def _log(self, ctx: _State, resource: Resource, entry: RecordEntry, topic: str) -> None:
        recorded = RecordedEntry(
            entry.key, entry.revision, entry.attributes, entry.record, datetime.now(UTC)
        )
        ctx.extend(ctx.history.setdefault(resource.id, {}).setdefault(entry.key, []), (recorded,))
        state = events.record_state(resource.id, entry, events.attributes_text(entry))
        ctx.log.append((topic, state))

    def read_record(self, ctx: _State, resource: Resource, key: str) -> RecordEntry | None:
        return self._rows(ctx, resource).get(key)

    def insert_record(self, ctx: _State, resource: Resource, entry: RecordEntry) -> RecordEntry:
        rows = self._rows(ctx, resource)
        if entry.key in rows:
            raise ConflictError(f"duplicate record identity: {resource.id}/{entry.key}")
        _check_unique(resource, rows, entry)
        ctx.put(rows, entry.key, entry)
        self._log(ctx, resource, entry, events.RECORD_INSERTED)
        return entry

    def replace_record(
        self,
        ctx: _State,
        resource: Resource,
        entry: RecordEntry,
        expected_revision: int,
        expected_attributes: AttributeValues,
    ) -> RecordEntry:
        rows = self._rows(ctx, resource)
        current = rows.get(entry.key)
        if current is None:
            raise NotFoundError(
                f"record not found: {resource.id}/{entry.key}", resource=resource.id, key=entry.key
            )
        if current.revision != expected_revision:
            raise ConflictError(
                f"record revision conflict: {resource.id}/{entry.key} is at "
                f"{current.revision}, expected {expected_revision}"
            )
        check_preconditions(resource, current.attributes, entry, expected_attributes)
        _check_unique(resource, rows, entry)
        ctx.put(rows, entry.key, entry)
        self._log(ctx, resource, entry, events.RECORD_REPLACED)
        return entry

    def delete_record(
        self, ctx: _State, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> None:
        rows = self._rows(ctx, resource)
        current = rows.get(key)
        if current is None:
            return
        if isinstance(expected_revision, int) and current.revision != expected_revision:
            raise ConflictError(
                f"record deletion revision conflict: {resource.id}/{key} is at "
                f"{current.revision}, expected {expected_revision}"
            )
        ctx.remove(rows, key)
        ctx.log.append(
            (events.RECORD_DELETED, events.tombstone_state(resource.id, key, current.revision))
        )

    def scan_records(
        self,
        ctx: _State,
        resource: Resource,
        equals: AttributeValues,
        after: str | None,
        limit: int | None,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[RecordEntry]:
        floor = None if after is None else after.encode()
        found = sorted(
            (
                row
                for row in self._rows(ctx, resource).values()
                if attributes_match(row.attributes, equals)
                and (floor is None or row.key.encode() > floor)
                and (key_prefix is None or row.key.startswith(key_prefix))
            ),
            key=lambda row: row.key.encode(),
        )
        return found if limit is None else found[:limit]

    def delete_matching_records(
        self, ctx: _State, resource: Resource, equals: AttributeValues
    ) -> None:
        rows = self._rows(ctx, resource)
        for key in [k for k, row in rows.items() if attributes_match(row.attributes, equals)]:
            revision = ctx.remove(rows, key).revision
            ctx.log.append(
                (events.RECORD_DELETED, events.tombstone_state(resource.id, key, revision))
            )

    def record_history(self, ctx: _State, resource: Resource, key: str) -> Sequence[RecordedEntry]:
        return tuple(ctx.history.get(resource.id, {}).get(key, ()))

    def purge_record(
        self, ctx: _State, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> Purge | None:
        if key not in self._rows(ctx, resource) and isinstance(expected_revision, int):
            raise ConflictError(
                f"record deletion revision conflict: {resource.id}/{key} is missing"
            )
        self.delete_record(ctx, resource, key, expected_revision)
        history = ctx.history.get(resource.id, {})
        if key in history:
            ctx.remove(history, key)
        return _purge_log(
            ctx,
            "records",
            resource.id,
            key,
            lambda topic, state: topic in events.RECORD_WRITES and state.get("key") == key,
        )

    def purges_of(self, ctx: _State, kind: str, resource: Resource, key: str) -> Sequence[Purge]:
        return [
            purge.marker_of(state)
            for topic, state in ctx.log
            if topic == purge.PURGE
            and isinstance(state, dict)
            and (state["kind"], state["resource"], state["key"]) == (kind, resource.id, key)
        ]

    # streams
    def _stream(self, ctx: _State, resource: Resource, stream: str) -> list[StreamEntry | None]:
        return ctx.streams.setdefault(resource.id, {}).setdefault(stream, [])

    def append_stream(
        self,
        ctx: _State,
        resource: Resource,
        stream: str,
        expected_head: int,
        entries: Sequence[AppendEntry],
    ) -> Sequence[StreamEntry]:
        stored = self._stream(ctx, resource, stream)
        if len(stored) != expected_head:
            raise ConflictError(
                f"stream head conflict: {resource.id}/{stream} is at {len(stored)}, "
                f"expected {expected_head}"
            )
        known = ctx.stream_ids.setdefault(resource.id, {}).setdefault(stream, {})
        for entry in entries:
            if entry.id in known:
                raise ConflictError(
                    f"duplicate stream entry identity: {resource.id}/{stream}/{entry.id}"
                )
        added = [
            StreamEntry(expected_head + offset, entry.id, entry.record)
            for offset, entry in enumerate(entries, start=1)
        ]
        ctx.extend(stored, added)
        for appended in added:
            ctx.put(known, appended.id, appended.position)
        ctx.log.extend(
            (events.STREAM_ENTRY_APPENDED, events.entry_state(resource.id, stream, entry))
            for entry in added
        )
        return [entry.fresh() for entry in added]

    def read_stream(
        self, ctx: _State, resource: Resource, stream: str, after: int, limit: int | None
    ) -> Sequence[StreamEntry]:
        stored = ctx.streams.get(resource.id, {}).get(stream, [])[after:]
        entries = [entry for entry in stored if entry is not None]
        return entries if limit is None else entries[:limit]

    def stream_head(self, ctx: _State, resource: Resource, stream: str) -> int:
        return len(ctx.streams.get(resource.id, {}).get(stream, []))

    def delete_stream(self, ctx: _State, resource: Resource, stream: str) -> None:
        streams = ctx.streams.get(resource.id, {})
        removed = streams.get(stream)
        if removed:
            ctx.remove(streams, stream)
            ctx.remove(ctx.stream_ids[resource.id], stream)
            state = events.stream_deleted_state(resource.id, stream, len(removed))
            ctx.log.append((events.STREAM_DELETED, state))

    def stream_names(
        self, ctx: _State, resource: Resource, after: str | None, limit: int
    ) -> Sequence[str]:
        floor = b"" if after is None else after.encode()
        names = sorted(
            (name for name in ctx.streams.get(resource.id, {}) if name.encode() > floor),
            key=str.encode,
        )
        return names[:limit]

    def purge_stream(
        self, ctx: _State, resource: Resource, stream: str, before: int | None
    ) -> Purge | None:
        stored = ctx.streams.get(resource.id, {}).get(stream, [])
        if before is None:
            self.delete_stream(ctx, resource, stream)
        else:
            known = ctx.stream_ids.get(resource.id, {}).get(stream, {})
            for index, entry in enumerate(stored[: max(before - 1, 0)]):
                if entry is not None:
                    ctx.set_at(stored, index, None)
                    ctx.remove(known, entry.id)
        return _purge_log(
            ctx,
            "streams",
            resource.id,
            stream,
            _EntriesBelow(ctx, resource.id, stream, before),
            before=before,
        )

    # blobs
    def put_blob(self, ctx: _State, resource: Resource, blob: BlobEntry) -> BlobEntry:
        blobs = ctx.blobs.setdefault(resource.id, {})
        stored = blobs.get(blob.key)
        if stored is None:
            ctx.put(blobs, blob.key, blob)
            ctx.log.append((events.BLOB_PUT, events.blob_state(resource.id, blob)))
            return blob
        if stored.data != blob.data:
            raise BlobConflictError(f"blob {resource.id}/{blob.key} exists with other bytes")
        return stored

    def fetch_blob(self, ctx: _State, resource: Resource, key: str) -> BlobEntry | None:
        return ctx.blobs.get(resource.id, {}).get(key)

    def blob_exists(self, ctx: _State, resource: Resource, key: str) -> bool:
        return key in ctx.blobs.get(resource.id, {})

    def purge_blob(self, ctx: _State, resource: Resource, key: str) -> Purge | None:
        blobs = ctx.blobs.get(resource.id, {})
        if key in blobs:
            ctx.remove(blobs, key)
        return _purge_log(
            ctx,
            "blobs",
            resource.id,
            key,
            lambda topic, state: topic == events.BLOB_PUT and state.get("key") == key,
        )

    # guards
    def lock_guard(self, ctx: _State, resource: Resource, key: str) -> None:
        # The one lock already excludes every other writer; only existence matters.
        if key not in self._rows(ctx, resource):
            raise NotFoundError(
                f"guard record not found: {resource.id}/{key}", resource=resource.id, key=key
            )


def _purge_log(
    ctx: _State,
    kind: str,
    resource_id: str,
    key: str,
    removes: Callable[[str, Mapping[str, Any]], bool],
    *,
    before: int | None = None,
) -> Purge | None:
    """Replace the payload events of ``key`` that ``removes`` picks (asked of every event of
    its log stream, in order) by their stubs and log the marker, as the SQL drivers do; a
    version is the event's place among those of its log stream."""
    log = ctx.log
    chosen: list[tuple[int, purge.Removed]] = []
    versions = 0
    markers = 0
    for index, (topic, state) in enumerate(log):
        stored = _state_of(state)
        if stored.get("resource") != resource_id:
            continue
        if topic == purge.PURGE and stored["kind"] == kind and stored["key"] == key:
            markers += 1
        elif _stream_key(topic, stored) == (kind, key):
            versions += 1
            if removes(topic, stored) and topic in purge.PAYLOAD_TOPICS:
                chosen.append((index, purge.Removed(versions, topic, _stored_bytes(state))))
        elif topic == purge.PURGED and stored.get("kind") == kind and stored.get("key") == key:
            versions += 1
    if not chosen:
        return None
    marker = markers + 1
    for index, removed in chosen:
        stub = events.decode(purge.stub(marker, removed).encode("utf-8"))
        # Unlike the SQL logs', a stub here names its key: the versions above count it.
        named = {**stub, "kind": kind, "resource": resource_id, "key": key}
        ctx.set_at(log, index, (purge.PURGED, named))
    made = purge.plan(kind, resource_id, key, [removed for _, removed in chosen], before)
    log.append((purge.PURGE, purge.marker_state(made)))
    return made


class _EntriesBelow:
    """Picks, in log order, the entries of one stream a purge removes: those of its earlier
    lives, and of its current life those below position ``before`` (all, if ``None``)."""

    def __init__(self, ctx: _State, resource_id: str, stream: str, before: int | None) -> None:
        self.before = before
        self.deletes = sum(
            1
            for topic, state in ctx.log
            if topic == events.STREAM_DELETED
            and _state_of(state).get("resource") == resource_id
            and _state_of(state).get("stream") == stream
        )

    def __call__(self, topic: str, state: Mapping[str, Any]) -> bool:
        if topic == events.STREAM_DELETED:
            self.deletes -= 1
            return False
        current = self.deletes == 0
        return not current or self.before is None or int(state["position"]) < self.before


def _stream_key(topic: str, state: Mapping[str, Any]) -> tuple[str, str] | None:
    """The log stream an event of the memory log belongs to: its kind and key."""
    if topic in (*events.RECORD_WRITES, events.RECORD_DELETED):
        return "records", str(state["key"])
    if topic in (events.STREAM_ENTRY_APPENDED, events.STREAM_DELETED):
        return "streams", str(state["stream"])
    if topic == events.BLOB_PUT:
        return "blobs", str(state["key"])
    return None


def _check_unique(resource: Resource, rows: Mapping[str, RecordEntry], entry: RecordEntry) -> None:
    violated = find_unique_violation(
        resource, entry, (row for row in rows.values() if row.key != entry.key)
    )
    if violated is not None:
        raise UniqueConstraintError(resource.id, violated)


class InMemoryBackend(Backend):
    """The in-memory backend: a reference and test backend with the full SPI semantics."""

    def __init__(self, resources: Sequence[Resource] = ()) -> None:
        super().__init__(resources, InMemoryDriver())

    @classmethod
    def at(cls, resources: Sequence[Resource], location: StoreLocation) -> InMemoryBackend:
        """A new, empty backend (every ``memory:`` store is a new one)."""
        return cls(resources)


def _state_of(state: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """An event's state as the SQL backends decode theirs (a tombstone's is kept as a dict,
    a blob put's as its stored bytes)."""
    if isinstance(state, dict):
        return state
    if isinstance(state, bytes):
        return events.decode_blob(state)
    return events.decode(state.encode())


def _stored_bytes(state: str | bytes | dict[str, Any]) -> bytes:
    """An event's state as the SQL backends store theirs."""
    if isinstance(state, bytes):
        return state
    return (state if isinstance(state, str) else dumps(state)).encode("utf-8")
