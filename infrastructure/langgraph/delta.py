"""The history a LangGraph ``DeltaChannel`` is rebuilt from, read from the thread's log.

A ``DeltaChannel`` stores its value only now and then (a snapshot); at other
checkpoints its value is the nearest ancestor's stored value (the *seed*)
followed by the writes made since. For a target checkpoint and some
channels, :func:`channel_histories` walks the target's ancestors by their
parent links (a thread is a tree: a fork's ancestors are its own branch, not
the checkpoints stored between), and for each channel keeps the writes
stored against each ancestor up to and including the nearest one that holds
a value for it, which is the seed. The target's own writes are pending for
the next step and are left out. Writes come oldest first; within one
checkpoint in LangGraph's order (task path, task id, index).

Everything is read in one transaction. Each ancestor's entry is found among
the stream's entries, read backwards from the target in growing windows
(a parent is almost always appended just before its child), then by its
live row (a parent appended after its child: a purge appends the live
checkpoints it keeps again). Every checkpoint entry a stream holds is live:
a purge erases the entries of what it removes. The ancestors' writes are
then read together, not one scan per ancestor: a write row's key begins
with its thread, namespace and checkpoint ids (as JSON), so one scan of the
thread's index, paged, takes the key range from the lowest ancestor's rows
to the highest's, and one more takes the thread's rows keyed by a digest
(a key too long for the store); rows of checkpoints that are not ancestors
(another branch's, stored between) are left out. A single ancestor's writes
are one scan of its checkpoint's index. Only the values of the channels
asked for are deserialized.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from typing import Any

from nenjim.infrastructure.langgraph.catalog import CHECKPOINTS, THREADS, VALUES, WRITES
from nenjim.infrastructure.langgraph.checkpoint_log import CheckpointLog
from nenjim.infrastructure.langgraph.stored import (
    DIGEST_PREFIX,
    CheckpointEntry,
    PendingWriteRecord,
    TaskWrites,
    ThreadAddress,
    ValueRef,
    dumps,
    filed_under,
    indexed,
    load_entry,
    pointer_position,
    sorted_writes,
)
from nenjim.infrastructure.langgraph.values import Fetched, Serde
from nenjim.infrastructure.storage import (
    RecordEntry,
    Records,
    SerializationError,
    StreamEntry,
    View,
)
from nenjim.infrastructure.storage.scalars import MAX_KEY_BYTES

_FIRST_WINDOW = 16
"""How many stream entries the first backwards read takes (each next one takes four times more)."""

_FIRST_PAGE_PER_CHECKPOINT = 2
"""How many write rows the first page of a key range read takes per checkpoint wanted (each
next page takes four times more): most checkpoints have one or two tasks' writes."""


@dataclass(slots=True)
class ChannelHistory:
    """What one channel's value at a checkpoint is rebuilt from.

    ``writes`` are ``(task_id, channel, value)``, oldest first; ``seeded``
    says whether an ancestor held a value (``seed``) or the walk reached the
    thread's root without one (start empty).
    """

    writes: list[tuple[str, str, Any]] = field(default_factory=list)
    seeded: bool = False
    seed: Any = None


def channel_histories(
    log: CheckpointLog,
    serde: Serde,
    address: ThreadAddress,
    checkpoint_id: str | None,
    channels: Sequence[str],
) -> dict[str, ChannelHistory]:
    """Each channel's history at ``checkpoint_id`` (``None``: the thread's newest checkpoint).

    A checkpoint that is not live (or a thread without checkpoints) has no
    ancestors: every channel gets no writes and no seed.
    """
    histories = {channel: ChannelHistory() for channel in dict.fromkeys(channels)}
    if not histories:
        return histories
    with log.reading() as view:
        fetch = _fetcher(view)

        def load(ref: ValueRef) -> Any:
            return log.values.load(serde, ref, fetch)

        ancestry = _Ancestry(view, address)
        target = ancestry.start(checkpoint_id)
        if target is None:
            return histories
        ancestry.expect(_expected_depth(target, histories))
        chain = _chain(ancestry, target, histories, load)
        writes = _writes_of(view, address, [ancestor_id for ancestor_id, _ in chain], histories)
        for ancestor_id, channels_counted in reversed(chain):
            for write in writes.get(ancestor_id, ()):
                if write.channel in channels_counted:
                    histories[write.channel].writes.append(
                        (write.task_id, write.channel, load(write.value))
                    )
    return histories


def _chain(
    ancestry: _Ancestry,
    target: CheckpointEntry,
    histories: dict[str, ChannelHistory],
    load: Callable[[ValueRef], Any],
) -> list[tuple[str, frozenset[str]]]:
    """The ancestors whose writes count, nearest first, each with the channels they count for
    (those still seeking their seed there); sets the seeds found on ``histories``."""
    seeking = set(histories)
    chain: list[tuple[str, frozenset[str]]] = []
    visited = {target.checkpoint_id}
    parent_id = target.parent_id
    while seeking and parent_id is not None and parent_id not in visited:
        entry = ancestry.live(parent_id)
        if entry is None:
            break
        visited.add(parent_id)
        chain.append((parent_id, frozenset(seeking)))
        refs = entry.values
        for channel in [channel for channel in seeking if channel in refs]:
            histories[channel].seeded = True
            histories[channel].seed = load(refs[channel])
            seeking.discard(channel)
        parent_id = entry.parent_id
    return chain


def _expected_depth(target: CheckpointEntry, channels: Iterable[str]) -> int:
    """How many ancestors the walk should read: LangGraph counts, in each checkpoint's
    metadata, the steps since each delta channel's last snapshot (a hint: 0 without it)."""
    counters = target.metadata_view.get("counters_since_delta_snapshot")
    if not isinstance(counters, dict):
        return 0
    steps = [counters.get(channel) for channel in channels]
    return max(
        (
            count[1] + 2
            for count in steps
            if isinstance(count, list | tuple) and len(count) == 2 and isinstance(count[1], int)
        ),
        default=0,
    )


def _writes_of(
    view: View, address: ThreadAddress, checkpoint_ids: Sequence[str], channels: Container[str]
) -> dict[str, tuple[PendingWriteRecord, ...]]:
    """The pending writes to ``channels`` of each of ``checkpoint_ids`` (checkpoints of
    ``address``), each in LangGraph's order; a checkpoint without writes is left out."""
    if not checkpoint_ids:
        return {}
    records = view.records(WRITES)
    if len(checkpoint_ids) == 1:  # one scan of its own index reads exactly its rows
        (checkpoint_id,) = checkpoint_ids
        rows = records.scan(
            index="checkpoint",
            equals={
                "thread_id": indexed(address.thread_id),
                "checkpoint_ns": indexed(address.checkpoint_ns),
                "checkpoint_id": indexed(checkpoint_id),
            },
        )
        tasks = (TaskWrites.load(row.record) for row in rows)
        return {checkpoint_id: sorted_writes(tasks, channels)}
    wanted = frozenset(checkpoint_ids)
    found: dict[str, list[TaskWrites]] = {}
    for row in _thread_rows(records, address, wanted):
        task = TaskWrites.load(row.record)
        checkpoint_ns, checkpoint_id = filed_under(row, task)
        if checkpoint_ns == address.checkpoint_ns and checkpoint_id in wanted:
            found.setdefault(checkpoint_id, []).append(task)
    return {checkpoint_id: sorted_writes(tasks, channels) for checkpoint_id, tasks in found.items()}


def _thread_rows(
    records: Records, address: ThreadAddress, ids: Iterable[str]
) -> Iterator[RecordEntry]:
    """The thread's write rows that may be those of checkpoints ``ids``: the key range from the
    lowest of their keys to the highest, then every row keyed by a digest.

    A row's key is ``[thread_id, checkpoint_ns, checkpoint_id, task_id]`` as JSON (ASCII), so
    one checkpoint's rows share a prefix and sort together; the range may also hold other
    branches' checkpoints (the caller filters them out). A key too long for the store is its
    digest, which sorts after every JSON key (``~`` after ``[``).
    """
    of_thread = {"thread_id": indexed(address.thread_id)}
    # Each checkpoint's key prefix as ``ThreadAddress.task_key`` writes it (``dumps``): the
    # thread's part once, then each id as the JSON string it is in a key.
    head = dumps([address.thread_id, address.checkpoint_ns])[:-1] + ","
    prefixes = [head + encode_basestring_ascii(checkpoint_id) + "," for checkpoint_id in ids]
    ranged = [p for p in prefixes if len(p) + len('""]') <= MAX_KEY_BYTES]  # else: all digests
    if ranged:
        first_page = _FIRST_PAGE_PER_CHECKPOINT * len(ranged)
        yield from _key_range(records, of_thread, min(ranged), max(ranged), first_page)
    yield from records.scan(index="thread", equals=of_thread, after=DIGEST_PREFIX)


def _key_range(
    records: Records, of_thread: dict[str, str], lowest: str, highest: str, limit: int
) -> Iterator[RecordEntry]:
    """The thread's rows from the first key after ``lowest`` to the last one beginning with
    ``highest``, read in pages of ``limit`` rows, each next page four times larger."""
    after = lowest
    while True:
        page = records.scan(index="thread", equals=of_thread, after=after, limit=limit)
        for row in page:
            if row.key > highest and not row.key.startswith(highest):
                return
            yield row
        if len(page) < limit:
            return
        after, limit = page[-1].key, limit * 4


def _fetcher(view: View) -> Callable[[str], Fetched]:
    """Reads a blob in the open transaction (the value store caches what it reads)."""
    blobs = view.blobs(VALUES)

    def fetch(key: str) -> Fetched:
        blob = blobs.fetch(key)
        return blob.data, str(blob.attributes["encoding"])

    return fetch


class _Ancestry:
    """A thread's live checkpoint entries, read from its stream backwards as a walk needs them.

    :meth:`start` reads the target's entry alone; each next read takes the window of
    entries below what was read, the first as deep as the walk is expected to go.
    """

    def __init__(self, view: View, address: ThreadAddress) -> None:
        self._address = address
        self._streams = view.streams(THREADS)
        self._rows = view.records(CHECKPOINTS)
        self._read: dict[str, StreamEntry] = {}
        """Stream entries read so far, by entry id (a checkpoint entry's id is its checkpoint's)."""
        self._low = 1
        """Every entry from this position up to the target's has been read."""
        self._window = _FIRST_WINDOW

    def start(self, checkpoint_id: str | None) -> CheckpointEntry | None:
        """The live checkpoint ``checkpoint_id`` (``None``: the newest one, as the stream's
        last entry names it); ``None`` if there is none."""
        if checkpoint_id is None:
            head = self._streams.head(stream=self._address.stream)
            last = self._entry_at(head) if head else None
            if last is None:
                return None
            self._read[last.id] = last  # most often the newest checkpoint itself
            latest = load_entry(last).latest
            if latest is None:
                return None
            checkpoint_id, position = latest.checkpoint_id, latest.position
        else:
            row = self._rows.read(self._address.checkpoint_key(checkpoint_id))
            if row is None:
                return None
            position = pointer_position(row.record)
        target = self._at(checkpoint_id, position)
        self._low = position
        return target

    def expect(self, depth: int) -> None:
        """Make the next read take at least ``depth`` entries (how far the walk should go)."""
        self._window = max(self._window, depth)

    def live(self, checkpoint_id: str) -> CheckpointEntry | None:
        """The live checkpoint ``checkpoint_id``; ``None`` if it is not stored (or not live)."""
        while checkpoint_id not in self._read and self._low > 1:
            self._read_below(self._low)
        if checkpoint_id in self._read:
            entry = load_entry(self._read[checkpoint_id])
            if isinstance(entry, CheckpointEntry):
                return entry
        # Stored above the entries read (a purge appended it again): its live row says where.
        row = self._rows.read(self._address.checkpoint_key(checkpoint_id))
        return None if row is None else self._at(checkpoint_id, pointer_position(row.record))

    def _at(self, checkpoint_id: str, position: int) -> CheckpointEntry:
        """The entry of ``checkpoint_id``, which its live row places at ``position``."""
        stored = self._read.get(checkpoint_id)
        if stored is None or stored.position != position:
            stored = self._entry_at(position)
        entry = None if stored is None else load_entry(stored)
        if not isinstance(entry, CheckpointEntry) or entry.checkpoint_id != checkpoint_id:
            raise SerializationError(
                f"checkpoint {checkpoint_id} of thread {self._address.thread_id!r} (namespace "
                f"{self._address.checkpoint_ns!r}) has no entry at position {position}"
            )
        return entry

    def _entry_at(self, position: int) -> StreamEntry | None:
        found = self._streams.read(stream=self._address.stream, after=position - 1, limit=1)
        return found[0] if found and found[0].position == position else None

    def _read_below(self, top: int) -> None:
        """Read the next window of entries below position ``top``."""
        first = max(1, top - self._window)
        for stored in self._streams.read(
            stream=self._address.stream, after=first - 1, limit=top - first
        ):
            if stored.position < top:  # a purge leaves gaps: a read by count may pass ``top``
                self._read[stored.id] = stored
        self._low = first
        self._window *= 4
