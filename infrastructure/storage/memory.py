"""``InMemoryBackend``: the reference driver, one lock and snapshots for savepoints.

Every outermost transaction (including each root-view operation's own) takes
one lock over all resources; every transaction and savepoint snapshots the
state, and a rollback restores the snapshot. Entries are immutable, so a snapshot copies only the
containers. Record history is kept as an append-only list per key, and every write as an event of
an append-only log (the topics and states of ``storage_events``), which followers read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from infrastructure.storage.backend import Backend
from infrastructure.storage.conditions import _Unchecked
from infrastructure.storage.driver import AttributeValues, StorageDriver
from infrastructure.storage.entries import (
    AppendEntry,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from infrastructure.storage.errors import (
    BlobConflictError,
    ConflictError,
    NotFoundError,
    UniqueConstraintError,
)
from infrastructure.storage.resource import Resource
from infrastructure.storage.rules import (
    attributes_match,
    check_preconditions,
    find_unique_violation,
)
from infrastructure.storage.sql import events


@dataclass
class _State:
    records: dict[str, dict[str, RecordEntry]] = field(default_factory=dict)
    history: dict[str, dict[str, list[RecordedEntry]]] = field(default_factory=dict)
    streams: dict[str, dict[str, list[StreamEntry]]] = field(default_factory=dict)
    blobs: dict[str, dict[str, BlobEntry]] = field(default_factory=dict)
    # Append-only, so a snapshot shares the list and remembers its length.
    # A state is kept as its write made it (JSON text or a dict); readers get dicts.
    log: list[tuple[str, str | dict[str, Any]]] = field(default_factory=list)
    log_length: int = 0

    def snapshot(self) -> _State:
        return _State(
            {r: dict(rows) for r, rows in self.records.items()},
            {r: {k: list(v) for k, v in keys.items()} for r, keys in self.history.items()},
            {r: {s: list(e) for s, e in streams.items()} for r, streams in self.streams.items()},
            {r: dict(blobs) for r, blobs in self.blobs.items()},
            self.log,
            len(self.log),
        )

    def restore(self, snapshot: _State) -> None:
        self.records, self.history = snapshot.records, snapshot.history
        self.streams, self.blobs = snapshot.streams, snapshot.blobs
        del self.log[snapshot.log_length :]


class InMemoryDriver(StorageDriver[_State]):
    """All resources in process memory under one reentrant lock."""

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
        with self._lock, self._savepoint() as state:
            yield state

    @contextmanager
    def _savepoint(self) -> Iterator[_State]:
        snapshot = self._state.snapshot()
        try:
            yield self._state
        except BaseException:
            self._state.restore(snapshot)
            raise

    def log_after(self, after: int, limit: int) -> list[tuple[int, str, dict[str, Any]]]:
        """Up to ``limit`` committed events after the ``after``-th, numbered from 1.

        Takes the store's lock: never call it inside a transaction.
        """
        with self._lock:
            page = self._state.log[after : after + limit]
        return [
            (after + offset, topic, state if isinstance(state, dict) else json.loads(state))
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
        ctx.history.setdefault(resource.id, {}).setdefault(entry.key, []).append(recorded)
        ctx.log.append((topic, events.record_state(resource.id, entry)))

    def read_record(self, ctx: _State, resource: Resource, key: str) -> RecordEntry | None:
        return self._rows(ctx, resource).get(key)

    def insert_record(self, ctx: _State, resource: Resource, entry: RecordEntry) -> RecordEntry:
        rows = self._rows(ctx, resource)
        if entry.key in rows:
            raise ConflictError(f"duplicate record identity: {resource.id}/{entry.key}")
        _check_unique(resource, rows, entry)
        rows[entry.key] = entry
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
            raise NotFoundError(f"record not found: {resource.id}/{entry.key}")
        if current.revision != expected_revision:
            raise ConflictError(
                f"record revision conflict: {resource.id}/{entry.key} is at "
                f"{current.revision}, expected {expected_revision}"
            )
        check_preconditions(resource, current.attributes, entry, expected_attributes)
        _check_unique(resource, rows, entry)
        rows[entry.key] = entry
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
        del rows[key]
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
    ) -> Sequence[RecordEntry]:
        floor = None if after is None else after.encode()
        found = sorted(
            (
                row
                for row in self._rows(ctx, resource).values()
                if attributes_match(row.attributes, equals)
                and (floor is None or row.key.encode() > floor)
            ),
            key=lambda row: row.key.encode(),
        )
        return found if limit is None else found[:limit]

    def delete_matching_records(
        self, ctx: _State, resource: Resource, equals: AttributeValues
    ) -> None:
        rows = self._rows(ctx, resource)
        for key in [k for k, row in rows.items() if attributes_match(row.attributes, equals)]:
            revision = rows.pop(key).revision
            ctx.log.append(
                (events.RECORD_DELETED, events.tombstone_state(resource.id, key, revision))
            )

    def record_history(self, ctx: _State, resource: Resource, key: str) -> Sequence[RecordedEntry]:
        return tuple(ctx.history.get(resource.id, {}).get(key, ()))

    # streams
    def _stream(self, ctx: _State, resource: Resource, stream: str) -> list[StreamEntry]:
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
        known = {entry.id for entry in stored}
        for entry in entries:
            if entry.id in known:
                raise ConflictError(
                    f"duplicate stream entry identity: {resource.id}/{stream}/{entry.id}"
                )
        added = [
            StreamEntry(expected_head + offset, entry.id, entry.record)
            for offset, entry in enumerate(entries, start=1)
        ]
        stored.extend(added)
        ctx.log.extend(
            (events.STREAM_ENTRY_APPENDED, events.entry_state(resource.id, stream, entry))
            for entry in added
        )
        return added

    def read_stream(
        self, ctx: _State, resource: Resource, stream: str, after: int, limit: int | None
    ) -> Sequence[StreamEntry]:
        entries = ctx.streams.get(resource.id, {}).get(stream, [])[after:]
        return entries if limit is None else entries[:limit]

    def stream_head(self, ctx: _State, resource: Resource, stream: str) -> int:
        return len(ctx.streams.get(resource.id, {}).get(stream, []))

    def delete_stream(self, ctx: _State, resource: Resource, stream: str) -> None:
        removed = ctx.streams.get(resource.id, {}).pop(stream, None)
        if removed:
            state = events.stream_deleted_state(resource.id, stream, len(removed))
            ctx.log.append((events.STREAM_DELETED, state))

    # blobs
    def put_blob(self, ctx: _State, resource: Resource, blob: BlobEntry) -> BlobEntry:
        blobs = ctx.blobs.setdefault(resource.id, {})
        stored = blobs.get(blob.key)
        if stored is None:
            blobs[blob.key] = blob
            ctx.log.append((events.BLOB_PUT, events.blob_state(resource.id, blob)))
            return blob
        if stored.data != blob.data:
            raise BlobConflictError(f"blob {resource.id}/{blob.key} exists with other bytes")
        return stored

    def fetch_blob(self, ctx: _State, resource: Resource, key: str) -> BlobEntry | None:
        return ctx.blobs.get(resource.id, {}).get(key)

    # guards
    def lock_guard(self, ctx: _State, resource: Resource, key: str) -> None:
        # The one lock already excludes every other writer; only existence matters.
        if key not in self._rows(ctx, resource):
            raise NotFoundError(f"guard record not found: {resource.id}/{key}")


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
