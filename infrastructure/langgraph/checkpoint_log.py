"""``CheckpointLog``: LangGraph threads on a Storage SPI backend.

Each ``(thread_id, checkpoint_ns)`` is a stream of ``langgraph.threads``,
holding a tree of checkpoints (each names its parent; the newest is the
highest id). A checkpoint is appended at the head its writer last saw, so
of two writers racing on one thread exactly one appends; the other's
transaction fails on the stream's expected head and is run again on fresh
state, where the race rule decides: a step (``source`` ``input`` or
``loop``) whose parent is not the newest checkpoint lost a race, a
:class:`CheckpointConflictError` (another run advanced the thread), if its
id is below the newest's or the newest is another step from the same
parent; any other such step, and roots, forks (``fork``) and state updates
(``update``), append (a branch). The checkpoint id is the entry id, so the
stream refuses a checkpoint stored twice.

LangGraph's view is the live rows of ``langgraph.checkpoints`` (one per
checkpoint, pointing at its entry) and ``langgraph.writes`` (one per task
and checkpoint). Deleting a thread, a run's checkpoints or pruning purges:
the checkpoints' live rows are deleted (their tombstones hold ids and a
position, no content, and keep a checkpoint id from being written again),
their pending writes purged, their stream entries erased (the whole stream,
or the entries before the last one removed: the live checkpoints among
those are appended again, unchanged, and their rows pointed at them), and
the blobs of the thread that nothing live of it still uses purged. Each
stream touched then gets a removal entry naming what went, the newest
checkpoint left and, by id and time only, the checkpoints erased, which is
what :mod:`nenjim.infrastructure.langgraph.history` reads.

Every operation is one transaction: it happens whole or not at all.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from nenjim.infrastructure.langgraph.catalog import (
    CATALOG,
    CHECKPOINTS,
    THREAD_IDS,
    THREADS,
    VALUES,
    WRITES,
)
from nenjim.infrastructure.langgraph.errors import CheckpointConflictError
from nenjim.infrastructure.langgraph.stored import (
    CheckpointEntry,
    Latest,
    PendingWriteRecord,
    Purged,
    RemovalEntry,
    TaskWrites,
    ThreadAddress,
    ThreadEntry,
    ValueRef,
    filed_under,
    indexed,
    is_digest,
    load_entry,
    now,
    pointer_ids,
    pointer_position,
    pointer_record,
    sorted_writes,
    thread_key,
    thread_of_row,
    thread_record,
)
from nenjim.infrastructure.langgraph.values import (
    EncodedValue,
    Fetched,
    Serde,
    ValueStore,
    blob_scope,
    rescoped,
    scope_of,
)
from nenjim.infrastructure.storage import (
    Backend,
    ConflictError,
    RecordEntry,
    SerializationError,
    StreamEntry,
    UnsupportedBackendError,
    View,
    validate_capabilities,
)
from nenjim.infrastructure.storage.reads import PreparedRead

_T = TypeVar("_T")

STEP_SOURCES = frozenset({"input", "loop"})
"""Checkpoint sources the race rule applies to (steps of a run)."""

ATTEMPTS = 5
"""How often a write runs when racing writers keep moving a stream's head under it."""

_TAIL_WINDOW = 8
_TAILS = 10_000
_POSITIONS = 10_000
"""Checkpoints whose stream position this process remembers (the newest read last)."""
_FEW = 8


@dataclass(frozen=True, slots=True)
class NewCheckpoint:
    """A checkpoint to append: LangGraph's ``put`` with its values serialized.

    ``texts`` are the JSON texts of the checkpoint (without values) and its
    metadata, ``versions`` its channel versions.

    ``values`` holds the channels of ``new_versions``; ``unchanged`` the
    other channels with a value, each with a function that serializes it,
    called only when the parent's entry has no reference for that version.
    """

    address: ThreadAddress
    checkpoint_id: str
    parent_id: str | None
    source: Any
    run_id: str | None
    texts: tuple[str, str]
    versions: Mapping[str, Any]
    values: Mapping[str, EncodedValue]
    unchanged: Mapping[str, Callable[[], EncodedValue]]


@dataclass(frozen=True, slots=True)
class NewWrite:
    """One pending write to store: its index and serialized value."""

    channel: str
    idx: int
    value: EncodedValue


@dataclass(frozen=True, slots=True)
class LoadedCheckpoint:
    """A live checkpoint's entry and its pending writes (in LangGraph's order)."""

    address: ThreadAddress
    entry: CheckpointEntry
    writes: tuple[PendingWriteRecord, ...]


@dataclass(frozen=True, slots=True)
class _Erased:
    """What purging a thread's stream (or its entries before a position) left to do."""

    head: int
    """The stream's head after the purge (0 after a whole purge)."""
    moved: tuple[CheckpointEntry, ...]
    """Live checkpoints among the erased entries, to append again (in stream order)."""
    purged: tuple[Purged, ...]
    """The checkpoints erased, with the span each was live in."""
    refs: set[ValueRef]
    """The value references of the erased checkpoints."""
    at: datetime
    """When the purge was recorded."""


@dataclass(frozen=True, slots=True)
class _Tail:
    """What a stream holds at its head: its length, newest live checkpoint, last checkpoint."""

    head: int
    latest: Latest | None
    last: CheckpointEntry | None
    removals: bool = False
    """Whether the stream had a removal (whose purge freed the ids it erased)."""


class CheckpointLog:
    """The saver's storage operations over a backend registered with :data:`CATALOG`."""

    def __init__(self, backend: Backend) -> None:
        validate_capabilities(backend)
        for resource in CATALOG:
            if backend.resources.get(resource.id) is not resource:
                raise UnsupportedBackendError(
                    f"backend does not register the LangGraph resource {resource.id!r}; open it "
                    "with nenjim.infrastructure.langgraph.catalog.CATALOG"
                )
        self.backend = backend
        self.values = ValueStore()
        self._tails: OrderedDict[str, _Tail] = OrderedDict()
        self._positions: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._tails_lock = threading.Lock()

    # transactions
    @contextmanager
    def reading(self) -> Iterator[View]:
        """A read-only scope on the backend (:meth:`Backend.reading`): on SQLite and
        PostgreSQL its statements are each a transaction of their own, which wait for no
        writer."""
        with self.backend.reading() as view:
            yield view

    def _read(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` in the scope :meth:`reading` opens (:meth:`Backend.run_reading`:
        no generator context managers around the saver's every read)."""
        return self.backend.run_reading(function)

    def _write(
        self,
        work: Callable[[View, bool], tuple[_T, Callable[[], None] | None]],
        *,
        one_write: bool = False,
    ) -> _T:
        """Run ``work(view, fresh)`` in a transaction, again on a conflict with another writer.

        The first attempt may trust what this process last saw of a stream
        (``fresh`` False); a stale view fails on the stream's expected head
        and the next attempts read everything anew. ``work`` returns its
        result and what to do once the transaction committed. A write that loses to
        other writers ``ATTEMPTS`` times is a :class:`CheckpointConflictError` (caused by
        the storage conflict).

        ``one_write``: ``work`` writes with one call at most, after its reads, and each
        check it relies on is that call's own (an insert refused on a taken key, a
        replace at the revision read). It then runs on the root view: its reads are
        lone reads, and its write a transaction of its own, which a database may send
        as one statement without ``BEGIN`` and ``COMMIT`` (PostgreSQL). Under READ
        COMMITTED the reads of a transaction see no more alike than that.
        """
        for attempt in range(ATTEMPTS):
            try:
                if one_write:
                    result, committed = work(self.backend.view, attempt > 0)
                else:
                    # Grouped: concurrent writers share one commit (one fsync on SQLite).
                    result, committed = self.backend.run_grouped(
                        partial(_attempt, work, attempt > 0)
                    )
            except CheckpointConflictError:
                raise
            except ConflictError as conflict:
                if attempt == ATTEMPTS - 1:
                    raise CheckpointConflictError(
                        f"the thread kept changing under this write ({ATTEMPTS} attempts, each "
                        f"losing to another writer; the last: {conflict}); nothing was written"
                    ) from conflict
                continue
            if committed is not None:
                committed()
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    # checkpoints
    def put(self, new: NewCheckpoint) -> None:
        """Append ``new`` to its thread (idempotent for the very same checkpoint)."""
        self._write(lambda view, fresh: self._put(view, new, fresh))

    def _put(
        self, view: View, new: NewCheckpoint, fresh: bool
    ) -> tuple[None, Callable[[], None] | None]:
        address = new.address
        tail = None if fresh else self._cached_tail(address.stream)
        if tail is None:
            tail = self._read_tail(view, address.stream)
        repeated = tail.last is not None and tail.last.checkpoint_id == new.checkpoint_id
        if (fresh or repeated or tail.removals) and self._already_stored(view, new):
            return None, None
        newest = None if tail.latest is None else tail.latest.checkpoint_id
        if new.parent_id is not None and new.source in STEP_SOURCES and new.parent_id != newest:
            raced = self._raced(view, address, tail, new)
            if raced is not None:
                if not fresh and self._already_stored(view, new):
                    return None, None
                raise CheckpointConflictError(
                    f"checkpoint {new.checkpoint_id} of thread {address.thread_id!r} (namespace "
                    f"{address.checkpoint_ns!r}) continues checkpoint {new.parent_id}, but the "
                    f"thread's newest checkpoint is {newest}, {raced}: another run advanced "
                    "the thread"
                )
        values = dict(new.values)
        parent_refs: dict[str, ValueRef] = {}
        if tail.last is not None and tail.last.checkpoint_id == new.parent_id:
            parent_refs = tail.last.values
        if new.unchanged:
            parent = (
                tail.last
                if tail.last is not None and tail.last.checkpoint_id == new.parent_id
                else self._live_entry(view, address, new.parent_id)
            )
            parent_versions = {} if parent is None else parent.versions
            parent_refs = {} if parent is None else parent.values
            for channel, encode in new.unchanged.items():
                ref = None
                if channel in parent_versions and parent_versions[channel] == new.versions.get(
                    channel
                ):
                    ref = parent_refs.get(channel)
                values[channel] = EncodedValue(ref) if ref is not None else encode()
        position = tail.head + 1
        latest = (
            Latest(new.checkpoint_id, position)
            if newest is None or new.checkpoint_id > newest
            else tail.latest
        )
        assert latest is not None
        entry = CheckpointEntry.create(
            checkpoint_id=new.checkpoint_id,
            parent_id=new.parent_id,
            texts=new.texts,
            values={channel: value.ref for channel, value in values.items()},
            latest=latest,
            position=position,
            after_removal=tail.removals,
        )
        stored = self.values.store(
            view, values.values(), careful=fresh, likely=set(parent_refs.values())
        )
        self._append_checkpoint(view, address, tail.head, entry, new.run_id)

        def committed() -> None:
            self.values.remember(stored)
            self._remember_tail(address.stream, _Tail(position, latest, entry, tail.removals))

        return None, committed

    def _raced(
        self, view: View, address: ThreadAddress, tail: _Tail, new: NewCheckpoint
    ) -> str | None:
        """Why a step whose parent is not the thread's newest checkpoint lost a race, or
        ``None`` if it starts a branch (the race rule, docs/langgraph.md).

        LangGraph makes a checkpoint (a fresh uuid6 id: ids grow with time) after reading
        its parent; so a step older than the newest checkpoint was made before that one
        existed, and a newest checkpoint that is another step from the same parent was
        stored by a writer that read the same parent as newest and stored first.
        """
        if tail.latest is None:
            return None
        if new.checkpoint_id < tail.latest.checkpoint_id:
            return "a newer one (this checkpoint was made before it)"
        newest = (
            tail.last
            if tail.last is not None and tail.last.checkpoint_id == tail.latest.checkpoint_id
            else self._entry_at(view, address, tail.latest.position)
        )
        if newest.parent_id == new.parent_id and newest.metadata_view.get("source") in STEP_SOURCES:
            return "another step from the same parent"
        return None

    def _append_checkpoint(
        self,
        view: View,
        address: ThreadAddress,
        head: int,
        entry: CheckpointEntry,
        run_id: str | None,
    ) -> None:
        if head == 0:
            self._register(view, address.thread_id)
        view.streams(THREADS).append(
            stream=address.stream, expected_head=head, entries=[entry.append_entry()]
        )
        key = address.checkpoint_key(entry.checkpoint_id)
        view.records(CHECKPOINTS).insert(
            key=key,
            revision=1,
            attributes={
                "thread_id": indexed(address.thread_id),
                "checkpoint_ns": indexed(address.checkpoint_ns),
                "run_id": None if run_id is None else indexed(run_id),
            },
            record=pointer_record(
                entry.position,
                [address.thread_id, address.checkpoint_ns, entry.checkpoint_id]
                if is_digest(key)
                else None,
            ),
        )

    def _already_stored(self, view: View, new: NewCheckpoint) -> bool:
        """True if ``new`` is stored live as is; a conflict if stored otherwise or deleted."""
        address = new.address
        key = address.checkpoint_key(new.checkpoint_id)
        where = (
            f"checkpoint {new.checkpoint_id} of thread {address.thread_id!r} "
            f"(namespace {address.checkpoint_ns!r})"
        )
        records = view.records(CHECKPOINTS)
        row = records.read(key)
        if row is None and records.history(key):
            # Under READ COMMITTED a racing put may commit between the read and
            # the history; a row once stored stays until it is deleted.
            row = records.read(key)
            if row is None:
                raise CheckpointConflictError(
                    f"{where} was stored before and deleted since; a checkpoint id is written once"
                )
        if row is None:
            return False
        stored = self._entry_at(view, address, pointer_position(row.record))
        if (stored.parent_id, stored.texts) == (new.parent_id, new.texts) and _same_values(
            stored.values, new
        ):
            return True
        raise CheckpointConflictError(f"{where} is already stored with other content")

    def get(self, address: ThreadAddress, checkpoint_id: str | None) -> LoadedCheckpoint | None:
        """The live checkpoint ``checkpoint_id``, or the newest one; ``None`` if there is none."""
        return self._read(partial(self._get, address, checkpoint_id))

    def _get(
        self, address: ThreadAddress, checkpoint_id: str | None, view: View
    ) -> LoadedCheckpoint | None:
        if checkpoint_id is None:
            return self._get_newest(view, address)
        # The pointer and the writes need nothing of each other: read together (one round
        # trip on PostgreSQL where two would follow each other). Where this process knows
        # the checkpoint's position, its entry is read with them, and kept if the pointer
        # read says the position is still the checkpoint's.
        reads: list[PreparedRead[Any]] = [
            view.records(CHECKPOINTS).prepared_read(address.checkpoint_key(checkpoint_id)),
            view.records(WRITES).prepared_scan(
                index="checkpoint", equals=self._of(address, checkpoint_id)
            ),
        ]
        guess = self._known_position(address, checkpoint_id)
        if guess is not None:
            reads.append(
                view.streams(THREADS).prepared_read(stream=address.stream, after=guess - 1, limit=1)
            )
        row, rows, *found = view.read_together(*reads)
        entry = None
        if row is not None and found and pointer_position(row.record) == guess:
            entry = _entry_found(found[0], guess, checkpoint_id)
        if entry is None:
            entry = self._entry_of_row(view, address, checkpoint_id, row)
        if entry is None:
            return None
        return LoadedCheckpoint(address, entry, _task_writes(rows))

    def _get_newest(self, view: View, address: ThreadAddress) -> LoadedCheckpoint | None:
        """The thread's newest checkpoint and its writes. Where this process knows the
        thread, its tail and the writes of the checkpoint it last saw newest are read
        together; the writes are read again only if another checkpoint became the newest."""
        hint = self._cached_tail(address.stream)
        guess = None if hint is None or hint.latest is None else hint.latest.checkpoint_id
        guessed: tuple[RecordEntry, ...] = ()
        if hint is not None and guess is not None:
            window, guessed = view.read_together(
                view.streams(THREADS).prepared_read(
                    stream=address.stream, after=hint.head - 1, limit=_TAIL_WINDOW
                ),
                view.records(WRITES).prepared_scan(
                    index="checkpoint", equals=self._of(address, guess)
                ),
            )
            tail = self._tail_from(view, address.stream, hint, window)
        else:
            tail = self._read_tail(view, address.stream)
        if tail.latest is None:
            return None
        if tail.last is not None and tail.last.checkpoint_id == tail.latest.checkpoint_id:
            entry = tail.last
        else:
            entry = self._entry_at(view, address, tail.latest.position)
        if entry.checkpoint_id == guess:
            return LoadedCheckpoint(address, entry, _task_writes(guessed))
        return LoadedCheckpoint(address, entry, self._writes(view, address, entry.checkpoint_id))

    def select(
        self,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
        limit: int | None,
        matches: Callable[[Mapping[str, Any]], bool] | None,
    ) -> list[LoadedCheckpoint]:
        """Live checkpoints, newest (highest id) first, as LangGraph's ``list`` selects them.

        One thread and namespace with a ``limit``, ``before`` or ``filter`` is read from its
        stream newest first (:meth:`_newest_first`), so it costs what it returns; without
        them, a thread that never had a removal is its whole stream (:meth:`_every_entry`);
        other selections read every live row they select.
        """
        return self._read(
            lambda view: self._select(
                view,
                thread_id=thread_id,
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=checkpoint_id,
                before=before,
                limit=limit,
                matches=matches,
            )
        )

    def _select(
        self,
        view: View,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
        limit: int | None,
        matches: Callable[[Mapping[str, Any]], bool] | None,
    ) -> list[LoadedCheckpoint]:
        if thread_id is not None and checkpoint_ns is not None and checkpoint_id is None:
            address = ThreadAddress(thread_id, checkpoint_ns)
            if limit is None and before is None and matches is None:
                every = self._every_entry(view, address)
                if every is not None:
                    return every
            else:
                newest = self._newest_first(view, address, before, limit, matches)
                found = self._writes_of(view, newest)
                return [
                    LoadedCheckpoint(address, entry, found.get((address, entry.checkpoint_id), ()))
                    for address, entry in newest
                ]
        candidates = [
            (address, found_id, position)
            for address, found_id, position in self._live_rows(view, thread_id, checkpoint_ns)
            if (checkpoint_id is None or found_id == checkpoint_id)
            and (before is None or found_id < before)
        ]
        candidates.sort(key=lambda c: c[1], reverse=True)
        if matches is None and limit is not None:
            candidates = candidates[:limit]
        entries = self._entries_at(view, candidates)
        chosen: list[tuple[ThreadAddress, CheckpointEntry]] = []
        for address, _, position in candidates:
            entry = entries[(address, position)]
            if matches is None or matches(entry.metadata_view):
                chosen.append((address, entry))
                if limit is not None and len(chosen) >= limit:
                    break
        writes = self._writes_of(view, chosen)
        return [
            LoadedCheckpoint(address, entry, writes.get((address, entry.checkpoint_id), ()))
            for address, entry in chosen
        ]

    def _every_entry(self, view: View, address: ThreadAddress) -> list[LoadedCheckpoint] | None:
        """Every checkpoint of a stream that never had a removal, highest id first, with its
        writes; ``None`` for one that had (or that this process last saw with one): its live
        checkpoints are then those its rows point at.

        Only a removal takes a checkpoint out of LangGraph's view, and it leaves its mark in
        the stream (its own entry, and ``after_removal`` on every entry appended after it),
        so without one every checkpoint entry is live: no row decoded. The stream and the
        thread's writes are read together (one round trip on PostgreSQL).
        """
        hint = self._cached_tail(address.stream)
        if hint is not None and hint.removals:
            return None
        stored_entries, rows = view.read_together(
            view.streams(THREADS).prepared_read(stream=address.stream),
            view.records(WRITES).prepared_scan(
                index="thread", equals={"thread_id": indexed(address.thread_id)}
            ),
        )
        entries = []
        for stored in stored_entries:
            entry = load_entry(stored)
            if not isinstance(entry, CheckpointEntry) or entry.after_removal:
                return None
            entries.append(entry)
        entries.sort(key=_checkpoint_id, reverse=True)
        found = _filed(rows, [(address, entry) for entry in entries])
        return [
            LoadedCheckpoint(address, entry, found.get((address, entry.checkpoint_id), ()))
            for entry in entries
        ]

    def _newest_first(
        self,
        view: View,
        address: ThreadAddress,
        before: str | None,
        limit: int | None,
        matches: Callable[[Mapping[str, Any]], bool] | None,
    ) -> list[tuple[ThreadAddress, CheckpointEntry]]:
        """The stream's live checkpoints, highest id first, read from its head backwards in
        growing windows until no entry left can be among the ``limit`` highest.

        Appends mostly follow ids, but need not (a root put with an old id, checkpoints
        appended again by a purge); each entry's ``latest`` (the highest live id when it was
        appended) bounds the ids of the entries before it, and says when to stop. After a
        removal, an entry is live only if its row still points at it.
        """
        tail = self._read_tail(view, address.stream)
        streams, records = view.streams(THREADS), view.records(CHECKPOINTS)
        found: list[CheckpointEntry] = []
        top = tail.head
        window = max(_TAIL_WINDOW, limit or 0)  # ids mostly follow appends: often one read
        while top > 0:
            first = max(1, top - window + 1)
            stored = [  # a purge leaves gaps: a read by count may pass ``top``
                item
                for item in streams.read(
                    stream=address.stream, after=first - 1, limit=top - first + 1
                )
                if item.position <= top
            ]
            if not stored:  # erased positions only
                top = first - 1
                window *= 4
                continue
            bound: Latest | None = None
            for index, item in enumerate(reversed(stored)):
                entry = load_entry(item)
                if index == len(stored) - 1:
                    bound = entry.latest
                if not isinstance(entry, CheckpointEntry):
                    continue
                if before is not None and entry.checkpoint_id >= before:
                    continue
                if tail.removals:
                    row = records.read(address.checkpoint_key(entry.checkpoint_id))
                    if row is None or pointer_position(row.record) != item.position:
                        continue
                if matches is None or matches(entry.metadata_view):
                    found.append(entry)
            found.sort(key=lambda e: e.checkpoint_id, reverse=True)
            top = first - 1
            if bound is None:
                break  # nothing was live up to the window's first entry
            if (
                limit is not None
                and len(found) >= limit
                and found[limit - 1].checkpoint_id >= bound.checkpoint_id
            ):
                break
            window *= 4
        chosen = found if limit is None else found[:limit]
        return [(address, entry) for entry in chosen]

    # pending writes
    def put_writes(
        self,
        address: ThreadAddress,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        writes: Sequence[NewWrite],
        *,
        overwrite: bool,
    ) -> None:
        """Store a task's writes; present ones are kept, or replaced when ``overwrite``.

        A write may come before its checkpoint is committed (LangGraph saves
        in the background), so a checkpoint not stored yet is accepted; one
        that was stored and deleted is not.
        """

        def work(view: View, fresh: bool) -> tuple[None, Callable[[], None] | None]:
            key = address.checkpoint_key(checkpoint_id)
            checkpoints = view.records(CHECKPOINTS)
            records = view.records(WRITES)
            task_key = address.task_key(checkpoint_id, task_id)
            # The checkpoint's row and the task's together: one statement on PostgreSQL.
            checkpoint, found = view.read_together(
                checkpoints.prepared_read(key), records.prepared_read(task_key)
            )
            # Read again after the history: under READ COMMITTED the checkpoint
            # may commit between the first read and the history, but a row once
            # stored stays until it is deleted.
            if checkpoint is None and checkpoints.history(key) and checkpoints.read(key) is None:
                raise CheckpointConflictError(
                    f"pending writes of task {task_id!r} name checkpoint {checkpoint_id} of "
                    f"thread {address.thread_id!r} (namespace {address.checkpoint_ns!r}), which "
                    "was deleted"
                )
            existing = None if found is None else TaskWrites.load(found.record)
            merged = dict(existing.writes) if existing is not None else {}
            chosen = []
            for write in writes:
                if write.idx in merged and not overwrite:
                    continue
                merged[write.idx] = (write.channel, task_path, write.value.ref)
                chosen.append(write.value)
            if not chosen:
                return None, None
            record = TaskWrites(
                task_id, merged, now(), self._where(address, checkpoint_id)
            ).record()
            attributes = self._of(address, checkpoint_id)
            if found is None:
                records.insert(key=task_key, revision=1, attributes=attributes, record=record)
            else:
                records.replace(
                    key=task_key,
                    expected_revision=found.revision,
                    next_revision=found.revision + 1,
                    attributes=attributes,
                    record=record,
                )
            stored = self.values.store(view, chosen, careful=fresh)
            return None, lambda: self.values.remember(stored)

        # Writes whose values are all inline are the task's row alone: one write, which
        # costs less outside a transaction where the backend sends it as one statement.
        one_write = self.backend.lone_writes_skip_transaction and all(
            write.value.data is None for write in writes
        )
        self._write(work, one_write=one_write)

    # removals
    def delete_threads(self, thread_ids: Sequence[str], reason: str) -> None:
        """Purge every checkpoint, write and value of the threads (all namespaces), at once."""

        def work(view: View, fresh: bool) -> tuple[None, Callable[[], None] | None]:
            touched: list[ThreadAddress] = []
            erased_keys: list[str] = []
            for thread_id in thread_ids:
                rows = self._live_rows(view, thread_id, None)
                of_thread = {"thread_id": indexed(thread_id)}
                write_rows = view.records(WRITES).scan(index="thread", equals=of_thread)
                if not rows and not write_rows:
                    continue
                removed: dict[ThreadAddress, list[str]] = defaultdict(list)
                for address, checkpoint_id, _ in rows:
                    removed[address].append(checkpoint_id)
                writes, refs = _writes_and_refs(thread_id, write_rows)
                for address in writes:
                    removed.setdefault(address, [])
                view.records(CHECKPOINTS).delete_matching(index="thread", equals=of_thread)
                view.records(WRITES).purge_matching(index="thread", equals=of_thread)
                for address, checkpoint_ids in removed.items():
                    erased = self._erase(view, address, below=None, keep=frozenset())
                    refs.update(erased.refs)
                    self._append_removal(
                        view,
                        address=address,
                        erased=erased,
                        reason=reason,
                        checkpoint_ids=sorted(checkpoint_ids),
                        writes=writes.get(address, {}),
                        rows={},
                        stay={},
                    )
                erased_keys.extend(self._purge_values(view, thread_id, refs))
                touched.extend(removed)
            return None, self._forgetting(touched, erased_keys)

        self._write(work)

    def delete_checkpoints(
        self, chosen: Callable[[View], Mapping[ThreadAddress, set[str]]], reason: str
    ) -> None:
        """Purge the checkpoints ``chosen(view)`` names, their writes and the values only they
        used; the checkpoints kept stay readable (those stored before the last one purged are
        appended again, unchanged)."""

        def work(view: View, fresh: bool) -> tuple[None, Callable[[], None] | None]:
            touched = []
            erased_keys: list[str] = []
            for address, checkpoint_ids in chosen(view).items():
                rows = {
                    found_id: row
                    for row in view.records(CHECKPOINTS).scan(
                        index="thread", equals={"thread_id": indexed(address.thread_id)}
                    )
                    for found, found_id in (ThreadAddress.of_row(row.key, row.record),)
                    if found == address
                }
                live = {cp: pointer_position(row.record) for cp, row in rows.items()}
                removing = sorted(set(checkpoint_ids) & set(live))
                if not removing:
                    continue
                below = max(live[cp] for cp in removing) + 1
                kept = frozenset(live) - set(removing)
                write_rows: list[RecordEntry] = []
                for checkpoint_id in removing:
                    write_rows.extend(
                        view.records(WRITES).scan(
                            index="checkpoint", equals=self._of(address, checkpoint_id)
                        )
                    )
                writes, refs = _writes_and_refs(address.thread_id, write_rows)
                for checkpoint_id in removing:
                    view.records(WRITES).purge_matching(
                        index="checkpoint", equals=self._of(address, checkpoint_id)
                    )
                    view.records(CHECKPOINTS).delete(key=address.checkpoint_key(checkpoint_id))
                erased = self._erase(view, address, below=below, keep=kept)
                refs.update(erased.refs)
                self._append_removal(
                    view,
                    address=address,
                    erased=erased,
                    reason=reason,
                    checkpoint_ids=removing,
                    writes=writes.get(address, {}),
                    rows={cp: rows[cp] for cp in kept},
                    stay={cp: live[cp] for cp in kept if live[cp] >= below},
                )
                erased_keys.extend(self._purge_values(view, address.thread_id, refs))
                touched.append(address)
            return None, self._forgetting(touched, erased_keys)

        self._write(work)

    def _erase(
        self, view: View, address: ThreadAddress, *, below: int | None, keep: frozenset[str]
    ) -> _Erased:
        """Purge a thread's stream (``below`` ``None``) or its entries before ``below``.

        Of the entries erased, the live checkpoints in ``keep`` are handed back to be
        appended again; every other checkpoint is reported with the span it was live in
        (purged spans of erased removal entries are carried on), and the value
        references of the erased checkpoints are collected.
        """
        streams = view.streams(THREADS)
        stamp = now()
        started: dict[str, datetime] = {}
        ended: dict[str, datetime] = {}
        purged: list[Purged] = []
        moved: list[CheckpointEntry] = []
        refs: set[ValueRef] = set()
        for stored in streams.read(stream=address.stream):
            entry = load_entry(stored)
            erased = below is None or stored.position < below
            if isinstance(entry, RemovalEntry):
                for checkpoint_id in entry.checkpoints:
                    ended.setdefault(checkpoint_id, entry.recorded_at)
                if erased:
                    purged.extend(entry.purged)
            elif erased and entry.checkpoint_id in keep:
                moved.append(entry)
            elif erased:
                started[entry.checkpoint_id] = entry.recorded_at
                refs.update(entry.values.values())
        purged.extend(
            Purged(checkpoint_id, at, ended.get(checkpoint_id, stamp))
            for checkpoint_id, at in started.items()
        )
        streams.purge(stream=address.stream, before=below)
        head = 0 if below is None else streams.head(stream=address.stream)
        return _Erased(head, tuple(moved), tuple(purged), refs, stamp)

    def _append_removal(
        self,
        view: View,
        *,
        address: ThreadAddress,
        erased: _Erased,
        reason: str,
        checkpoint_ids: Sequence[str],
        writes: Mapping[str, tuple[str, ...]],
        rows: Mapping[str, RecordEntry],
        stay: Mapping[str, int],
    ) -> None:
        """Append the kept checkpoints an erasure moved, then the removal entry.

        ``stay`` are the live checkpoints left in place (id to position); each moved one
        gets its live row pointed at its new position (``rows`` are the live rows).
        """
        live = dict(stay)
        head = erased.head
        entries = []
        for original in erased.moved:
            head += 1
            live[original.checkpoint_id] = head
            newest = max(live)
            entry = original.moved(latest=Latest(newest, live[newest]), position=head)
            entries.append(entry.append_entry())
            row = rows[original.checkpoint_id]
            view.records(CHECKPOINTS).replace(
                key=row.key,
                expected_revision=row.revision,
                next_revision=row.revision + 1,
                attributes=dict(row.attributes),
                record=pointer_record(head, pointer_ids(row.record)),
            )
        newest_left = max(live) if live else None
        removal = RemovalEntry(
            entry_id=f"removal:{uuid.uuid4()}",
            reason=reason,
            checkpoints=tuple(checkpoint_ids),
            writes=writes,
            latest=None if newest_left is None else Latest(newest_left, live[newest_left]),
            recorded_at=erased.at,
            position=head + 1,
            purged=erased.purged,
        )
        entries.append(removal.append_entry())
        view.streams(THREADS).append(
            stream=address.stream, expected_head=erased.head, entries=entries
        )

    def _purge_values(self, view: View, thread_id: str, refs: Iterable[ValueRef]) -> list[str]:
        """Purge the thread's own blobs among ``refs`` that nothing live of it still uses."""
        scope = scope_of(thread_id)
        keys = {key for kind, _, key in refs if kind == "blob" and blob_scope(key) == scope}
        if not keys:
            return []
        rows = self._live_rows(view, thread_id, None)
        for entry in self._entries_at(view, rows).values():
            keys.difference_update(key for _, _, key in entry.values.values())
        for row in view.records(WRITES).scan(
            index="thread", equals={"thread_id": indexed(thread_id)}
        ):
            keys.difference_update(key for _, _, key in TaskWrites.load(row.record).refs())
        blobs = view.blobs(VALUES)
        for key in sorted(keys):
            blobs.purge(key=key)
        return sorted(keys)

    def runs(self, view: View, run_ids: Sequence[str]) -> Mapping[ThreadAddress, set[str]]:
        """The live checkpoints whose metadata names one of ``run_ids``, by thread."""
        found: dict[ThreadAddress, set[str]] = defaultdict(set)
        for run_id in run_ids:
            rows = view.records(CHECKPOINTS).scan(index="run", equals={"run_id": indexed(run_id)})
            for row in rows:
                address, checkpoint_id = ThreadAddress.of_row(row.key, row.record)
                found[address].add(checkpoint_id)
        return found

    def all_but_latest(
        self, view: View, thread_ids: Sequence[str]
    ) -> Mapping[ThreadAddress, set[str]]:
        """Every live checkpoint of the threads but the newest of each namespace."""
        found: dict[ThreadAddress, set[str]] = defaultdict(set)
        for thread_id in thread_ids:
            for address, checkpoint_id, _ in self._live_rows(view, thread_id, None):
                found[address].add(checkpoint_id)
        return {address: ids - {max(ids)} for address, ids in found.items()}

    def live_metadata(self, view: View, thread_id: str) -> Iterator[Mapping[str, Any]]:
        """The metadata of every live checkpoint of a thread."""
        rows = self._live_rows(view, thread_id, None)
        for entry in self._entries_at(view, rows).values():
            yield entry.metadata_view

    # copies
    def copy_thread(self, source: str, target: str) -> None:
        """Append every live checkpoint and write of ``source`` to ``target``, ids kept."""

        def work(view: View, fresh: bool) -> tuple[None, Callable[[], None] | None]:
            if self._live_rows(view, target, None, limit=1):
                raise CheckpointConflictError(
                    f"cannot copy thread {source!r} into thread {target!r}: the target has "
                    "checkpoints (delete it first)"
                )
            rows = self._live_rows(view, source, None)
            entries = self._entries_at(view, rows)
            writes = view.records(WRITES).scan(
                index="thread", equals={"thread_id": indexed(source)}
            )
            by_address: dict[ThreadAddress, list[CheckpointEntry]] = defaultdict(list)
            for (address, _), entry in entries.items():
                by_address[address].append(entry)
            copy_ref = self._value_copier(view, source, target)
            for address, copied in by_address.items():
                destination = ThreadAddress(target, address.checkpoint_ns)
                tail = self._read_tail(view, destination.stream)
                head, latest = tail.head, tail.latest
                if tail.removals:
                    self._refuse_deleted(view, destination, copied)
                for original in sorted(copied, key=lambda e: e.checkpoint_id):
                    head += 1
                    if latest is None or original.checkpoint_id > latest.checkpoint_id:
                        latest = Latest(original.checkpoint_id, head)
                    entry = original.copied(
                        latest=latest,
                        position=head,
                        copied_from=source,
                        values={ch: copy_ref(ref) for ch, ref in original.values.items()},
                        after_removal=tail.removals,
                    )
                    run_id = original.metadata_view.get("run_id")
                    self._append_checkpoint(
                        view,
                        destination,
                        head - 1,
                        entry,
                        run_id if isinstance(run_id, str) else None,
                    )
            recorded_at = now()
            for row in writes:
                task = TaskWrites.load(row.record)
                ns, checkpoint_id = filed_under(row, task)
                destination = ThreadAddress(target, ns)
                view.records(WRITES).insert(
                    key=destination.task_key(checkpoint_id, task.task_id),
                    revision=1,
                    attributes=self._of(destination, checkpoint_id),
                    record=TaskWrites(
                        task.task_id,
                        {
                            idx: (channel, path, copy_ref(value))
                            for idx, (channel, path, value) in task.writes.items()
                        },
                        recorded_at,
                        self._where(destination, checkpoint_id),
                    ).record(),
                )
            targets = [ThreadAddress(target, address.checkpoint_ns) for address in by_address]
            return None, self._forgetting(targets)

        self._write(work)

    def _refuse_deleted(
        self, view: View, address: ThreadAddress, entries: Iterable[CheckpointEntry]
    ) -> None:
        """``CheckpointConflictError`` if the thread held one of the checkpoint ids once."""
        records = view.records(CHECKPOINTS)
        for entry in entries:
            key = address.checkpoint_key(entry.checkpoint_id)
            if records.read(key) is None and records.history(key):
                raise CheckpointConflictError(
                    f"cannot copy checkpoint {entry.checkpoint_id} into thread "
                    f"{address.thread_id!r} (namespace {address.checkpoint_ns!r}): it was stored "
                    "there before and deleted since; a checkpoint id is written once"
                )

    def _value_copier(self, view: View, source: str, target: str) -> Callable[[ValueRef], ValueRef]:
        """A function giving a source thread's value reference in the target thread, storing
        the target's copy of the blob the first time (so erasing one thread leaves the other's
        values)."""
        source_scope, target_scope = scope_of(source), scope_of(target)
        blobs = view.blobs(VALUES)
        done: set[str] = set()

        def copy(ref: ValueRef) -> ValueRef:
            kind, _, key = ref
            if kind != "blob" or blob_scope(key) != source_scope:
                return ref
            copied = rescoped(ref, target_scope)
            if copied[2] not in done:
                done.add(copied[2])
                if not blobs.exists(copied[2]):
                    blob = blobs.fetch(key)
                    blobs.put_if_absent(
                        key=copied[2], data=blob.data, attributes=dict(blob.attributes)
                    )
            return copied

        return copy

    # history
    def thread_entries(self, address: ThreadAddress) -> tuple[ThreadEntry, ...]:
        """Every entry ever appended to a thread's stream, oldest first."""
        with self.reading() as view:
            return tuple(
                load_entry(entry) for entry in view.streams(THREADS).read(stream=address.stream)
            )

    def task_revisions(
        self, address: ThreadAddress, checkpoint_id: str, task_ids: Sequence[str]
    ) -> list[TaskWrites]:
        """Every revision ever stored of the named tasks' writes against a checkpoint."""
        with self.reading() as view:
            records = view.records(WRITES)
            return [
                TaskWrites.load(revision.record)
                for task_id in task_ids
                for revision in records.history(address.task_key(checkpoint_id, task_id))
            ]

    def writes(self, address: ThreadAddress, checkpoint_id: str) -> tuple[PendingWriteRecord, ...]:
        """The live pending writes of a checkpoint."""
        return self._read(lambda view: self._writes(view, address, checkpoint_id))

    def load(self, serde: Serde, ref: ValueRef) -> Any:
        """A stored value (a blob not in this process's cache is read in a transaction)."""
        return self.values.load(serde, ref, self._fetch_blob)

    def _fetch_blob(self, key: str) -> Fetched:
        blob = self._read(lambda view: view.blobs(VALUES).fetch(key))
        return blob.data, str(blob.attributes["encoding"])

    # reading helpers
    def _cached_tail(self, stream: str) -> _Tail | None:
        with self._tails_lock:
            return self._tails.get(stream)

    def _known_position(self, address: ThreadAddress, checkpoint_id: str) -> int | None:
        """The position this process last found checkpoint ``checkpoint_id`` at, unless the
        stream's last entry it keeps is that checkpoint (which serves with no read)."""
        with self._tails_lock:
            tail = self._tails.get(address.stream)
            last = None if tail is None else tail.last
            if last is not None and last.checkpoint_id == checkpoint_id:
                return None
            return self._positions.get((address.stream, checkpoint_id))

    def _remember_position(self, stream: str, checkpoint_id: str, position: int) -> None:
        with self._tails_lock:
            self._positions[(stream, checkpoint_id)] = position
            self._positions.move_to_end((stream, checkpoint_id))
            if len(self._positions) > _POSITIONS:
                self._positions.popitem(last=False)

    def _remember_tail(self, stream: str, tail: _Tail) -> None:
        with self._tails_lock:
            known = self._tails.get(stream)
            if known is None or known.head <= tail.head:
                self._tails[stream] = tail
                self._tails.move_to_end(stream)
                if len(self._tails) > _TAILS:
                    self._tails.popitem(last=False)

    def _forgetting(
        self, addresses: Iterable[ThreadAddress], erased: Iterable[str] = ()
    ) -> Callable[[], None]:
        """What to do after a commit that appended to these streams behind the tail cache
        (and erased these blobs)."""
        streams = [address.stream for address in addresses]
        keys = list(erased)

        def forget() -> None:
            with self._tails_lock:
                for stream in streams:
                    self._tails.pop(stream, None)
            self.values.forget(keys)

        return forget

    def _read_tail(self, view: View, stream: str) -> _Tail:
        """The stream's head and tail as stored now (this process's last view narrows the read)."""
        return self._tail_from(view, stream, self._cached_tail(stream), None)

    def _tail_from(
        self,
        view: View,
        stream: str,
        hint: _Tail | None,
        window: Sequence[StreamEntry] | None,
    ) -> _Tail:
        """:meth:`_read_tail` from ``hint`` (what this process last saw of the stream) and
        ``window``, the entries from the hint's head on (read here when ``None``)."""
        streams = view.streams(THREADS)
        last = None
        if hint is not None:
            if window is None:
                window = streams.read(stream=stream, after=hint.head - 1, limit=_TAIL_WINDOW)
            if window and len(window) < _TAIL_WINDOW and window[0].position == hint.head:
                last = window[-1]
                if hint.last is not None and hint.last.is_stored_as(last):
                    return hint  # the very entry this process holds decoded: nothing new
        if last is None:
            head = streams.head(stream=stream)
            if head == 0:
                return _Tail(0, None, None)
            last = streams.read(stream=stream, after=head - 1, limit=1)[0]
        entry = load_entry(last)
        if isinstance(entry, CheckpointEntry):
            tail = _Tail(last.position, entry.latest, entry, entry.after_removal)
        else:
            tail = _Tail(last.position, entry.latest, None, True)
        self._remember_tail(stream, tail)
        return tail

    def _entry_at(self, view: View, address: ThreadAddress, position: int) -> CheckpointEntry:
        found = view.streams(THREADS).read(stream=address.stream, after=position - 1, limit=1)
        entry = load_entry(found[0]) if found else None
        if not isinstance(entry, CheckpointEntry) or entry.position != position:
            raise SerializationError(
                f"thread {address.thread_id!r} (namespace {address.checkpoint_ns!r}) has no "
                f"checkpoint entry at position {position}"
            )
        return entry

    def _live_entry(
        self, view: View, address: ThreadAddress, checkpoint_id: str | None
    ) -> CheckpointEntry | None:
        if checkpoint_id is None:
            return None
        row = view.records(CHECKPOINTS).read(address.checkpoint_key(checkpoint_id))
        return self._entry_of_row(view, address, checkpoint_id, row)

    def _entry_of_row(
        self, view: View, address: ThreadAddress, checkpoint_id: str, row: RecordEntry | None
    ) -> CheckpointEntry | None:
        """The entry checkpoint ``checkpoint_id``'s live ``row`` points at (``None``: none)."""
        if row is None:
            return None
        position = pointer_position(row.record)
        # A live row names the one entry ever stored at its position with its id (ids are
        # written once), so this process's copy of the stream's last entry serves if it is
        # that one: a put's parent, LangGraph's read of the checkpoint it just wrote.
        cached = self._cached_tail(address.stream)
        if (
            cached is not None
            and cached.last is not None
            and (cached.last.checkpoint_id, cached.last.position) == (checkpoint_id, position)
        ):
            return cached.last
        entry = self._entry_at(view, address, position)
        if entry.checkpoint_id != checkpoint_id:
            raise SerializationError(
                f"the live row of checkpoint {checkpoint_id} points at entry {entry.checkpoint_id}"
            )
        self._remember_position(address.stream, checkpoint_id, position)
        return entry

    def _register(self, view: View, thread_id: str) -> None:
        """Record a thread id in ``langgraph.thread_ids`` unless it is there."""
        thread_ids, key = view.records(THREAD_IDS), thread_key(thread_id)
        if thread_ids.read(key) is None:
            thread_ids.insert(
                key=key, revision=1, attributes={"listed": True}, record=thread_record(thread_id)
            )

    def _live_rows(
        self,
        view: View,
        thread_id: str | None,
        checkpoint_ns: str | None,
        *,
        limit: int | None = None,
    ) -> list[tuple[ThreadAddress, str, int]]:
        """``(address, checkpoint id, position)`` of the live checkpoints selected."""
        if thread_id is None:
            found = []
            for row in view.records(THREAD_IDS).scan(index=None, equals={}):
                found.extend(
                    self._live_rows(view, thread_of_row(row.key, row.record), checkpoint_ns)
                )
                if limit is not None and len(found) >= limit:
                    return found[:limit]
            return found
        rows = view.records(CHECKPOINTS).scan(
            index="thread",
            equals={"thread_id": indexed(thread_id)},
            limit=limit if checkpoint_ns is None else None,
        )
        selected = []
        for row in rows:
            address, checkpoint_id = ThreadAddress.of_row(row.key, row.record)
            if checkpoint_ns is None or address.checkpoint_ns == checkpoint_ns:
                selected.append((address, checkpoint_id, pointer_position(row.record)))
        return selected

    def _entries_at(
        self, view: View, rows: Sequence[tuple[ThreadAddress, str, int]]
    ) -> dict[tuple[ThreadAddress, int], CheckpointEntry]:
        """The entries at the rows' positions: one range read per stream."""
        positions: dict[ThreadAddress, list[int]] = defaultdict(list)
        for address, _, position in rows:
            positions[address].append(position)
        entries: dict[tuple[ThreadAddress, int], CheckpointEntry] = {}
        for address, wanted in positions.items():
            first, last = min(wanted), max(wanted)
            wanted_set = set(wanted)
            found: set[int] = set()
            for stored in view.streams(THREADS).read(
                stream=address.stream, after=first - 1, limit=last - first + 1
            ):
                if stored.position in wanted_set:
                    entry = load_entry(stored)
                    if not isinstance(entry, CheckpointEntry):
                        raise SerializationError(
                            f"a live checkpoint of thread {address.thread_id!r} points at "
                            f"removal entry {entry.entry_id}"
                        )
                    entries[(address, stored.position)] = entry
                    found.add(stored.position)
            missing = wanted_set - found
            if missing:
                raise SerializationError(
                    f"thread {address.thread_id!r} (namespace {address.checkpoint_ns!r}) has no "
                    f"entries at positions {sorted(missing)}"
                )
        return entries

    @staticmethod
    def _of(address: ThreadAddress, checkpoint_id: str) -> dict[str, Any]:
        """A pending write row's attributes (each too long for the store as its digest)."""
        return {
            "thread_id": indexed(address.thread_id),
            "checkpoint_ns": indexed(address.checkpoint_ns),
            "checkpoint_id": indexed(checkpoint_id),
        }

    @staticmethod
    def _where(address: ThreadAddress, checkpoint_id: str) -> tuple[str, str] | None:
        """What a pending write record keeps when its row's attributes cannot say it."""
        if (indexed(address.checkpoint_ns), indexed(checkpoint_id)) == (
            address.checkpoint_ns,
            checkpoint_id,
        ):
            return None
        return (address.checkpoint_ns, checkpoint_id)

    def _writes(
        self, view: View, address: ThreadAddress, checkpoint_id: str
    ) -> tuple[PendingWriteRecord, ...]:
        equals = self._of(address, checkpoint_id)
        return _task_writes(view.records(WRITES).scan(index="checkpoint", equals=equals))

    def _writes_of(
        self, view: View, chosen: Sequence[tuple[ThreadAddress, CheckpointEntry]]
    ) -> dict[tuple[ThreadAddress, str], tuple[PendingWriteRecord, ...]]:
        """The writes of each chosen checkpoint: per checkpoint for a few, per thread for more."""
        per_thread: dict[str, list[tuple[ThreadAddress, CheckpointEntry]]] = defaultdict(list)
        for address, entry in chosen:
            per_thread[address.thread_id].append((address, entry))
        found: dict[tuple[ThreadAddress, str], tuple[PendingWriteRecord, ...]] = {}
        for thread_id, items in per_thread.items():
            if len(items) <= _FEW:
                for address, entry in items:
                    found[(address, entry.checkpoint_id)] = self._writes(
                        view, address, entry.checkpoint_id
                    )
                continue
            rows = view.records(WRITES).scan(
                index="thread", equals={"thread_id": indexed(thread_id)}
            )
            found.update(_filed(rows, items))
        return found


def _filed(
    rows: Iterable[RecordEntry], chosen: Sequence[tuple[ThreadAddress, CheckpointEntry]]
) -> dict[tuple[ThreadAddress, str], tuple[PendingWriteRecord, ...]]:
    """The writes of each chosen checkpoint of one thread among the thread's write ``rows``."""
    # Filed by (namespace, checkpoint id): only the chosen ones' are put in order.
    grouped: dict[tuple[str, str], list[TaskWrites]] = defaultdict(list)
    for row in rows:
        task = TaskWrites.load(row.record)
        grouped[filed_under(row, task)].append(task)
    found: dict[tuple[ThreadAddress, str], tuple[PendingWriteRecord, ...]] = {}
    for address, entry in chosen:
        tasks = grouped.get((address.checkpoint_ns, entry.checkpoint_id))
        if tasks is not None:
            found[(address, entry.checkpoint_id)] = sorted_writes(tasks)
    return found


def _entry_found(
    found: Sequence[StreamEntry], position: int, checkpoint_id: str
) -> CheckpointEntry | None:
    """The entry of checkpoint ``checkpoint_id`` at ``position`` that a read of that position
    found, or ``None`` (it is not there: the caller reads by the pointer)."""
    entry = load_entry(found[0]) if found else None
    if not isinstance(entry, CheckpointEntry):
        return None
    if (entry.position, entry.checkpoint_id) != (position, checkpoint_id):
        return None
    return entry


def _task_writes(rows: Iterable[RecordEntry]) -> tuple[PendingWriteRecord, ...]:
    """The pending writes of one checkpoint's rows, in LangGraph's order."""
    return sorted_writes(TaskWrites.load(row.record) for row in rows)


def _writes_and_refs(
    thread_id: str, rows: Iterable[RecordEntry]
) -> tuple[dict[ThreadAddress, dict[str, tuple[str, ...]]], set[ValueRef]]:
    """The task ids of pending write rows by namespace and checkpoint, and their values."""
    grouped: dict[ThreadAddress, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    refs: set[ValueRef] = set()
    for row in rows:
        task = TaskWrites.load(row.record)
        ns, checkpoint_id = filed_under(row, task)
        grouped[ThreadAddress(thread_id, ns)][checkpoint_id].append(task.task_id)
        refs.update(task.refs())
    writes = {
        address: {cp: tuple(tasks) for cp, tasks in per_cp.items()}
        for address, per_cp in grouped.items()
    }
    return writes, refs


def _checkpoint_id(entry: CheckpointEntry) -> str:
    return entry.checkpoint_id


def _attempt(
    work: Callable[[View, bool], tuple[_T, Callable[[], None] | None]], fresh: bool, view: View
) -> tuple[_T, Callable[[], None] | None]:
    """One attempt of a write (``fresh``: reading everything anew) on ``view``."""
    return work(view, fresh)


def _same_values(stored: Mapping[str, ValueRef], new: NewCheckpoint) -> bool:
    """Whether ``new`` holds the values stored (a blob by its content, whatever its scope)."""
    if set(stored) != set(new.values) | set(new.unchanged):
        return False
    for channel, ref in stored.items():
        value = new.values.get(channel)
        encoded = (value if value is not None else new.unchanged[channel]()).ref
        if _content(encoded) != _content(ref):
            return False
    return True


def _content(ref: ValueRef) -> ValueRef:
    """A value reference without the scope of its blob (the same content in any scope)."""
    kind, type_, key = ref
    return (kind, type_, key.split("@", 1)[0]) if kind == "blob" else ref
