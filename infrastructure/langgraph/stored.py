"""What the saver stores: thread addresses and keys, and the three stored shapes.

- A **checkpoint entry** (stream ``langgraph.threads``, entry id = the
  checkpoint id): the checkpoint without its channel values, its metadata,
  its parent, a reference for each channel value, the newest live
  checkpoint of the thread once it is appended, and when it was recorded.
- A **removal entry** (same stream): which checkpoints (and which of their
  pending writes) a delete, a run delete or a prune took out of LangGraph's
  view, the newest live checkpoint left, and when; and, since removals
  purge, the checkpoints whose entries it erased with the span of time each
  was live (``purged``: ids and times only, no content), so that
  :mod:`~nenjim.infrastructure.langgraph.history` can tell a purged
  checkpoint from one that never was.
- A **task's pending writes** (records ``langgraph.writes``, one per task
  and checkpoint): for each write its index, channel, task path and a
  reference to its value, and when the record was written.

Each envelope's payload is one field, ``body``: the shape as compact JSON
*text*. The storage layer renders and re-checks every envelope in Canonical
JSON, value by value in Python; one text field takes it one step, where the
versions, seen-versions, metadata and references of a checkpoint would take
hundreds. The text escapes non-ASCII, so any LangGraph string (NUL and lone
surrogates included) can be stored.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from nenjim.infrastructure.storage import (
    AppendEntry,
    DurableRecord,
    RecordEntry,
    SerializationError,
    StreamEntry,
)
from nenjim.infrastructure.storage.scalars import MAX_INDEXED_TEXT_BYTES, MAX_KEY_BYTES

FORMAT_VERSION = "1.0"
CHECKPOINT_ENTRY = "langgraph.checkpoint"
REMOVAL_ENTRY = "langgraph.removal"
CHECKPOINT_POINTER = "langgraph.checkpoint_pointer"
THREAD_ID = "langgraph.thread_id"
PENDING_WRITES = "langgraph.pending_writes"

ValueRef = tuple[str, str, str]
"""``("inline", type, base64 bytes)``, ``("inline-zlib", type, base64 zlib-compressed bytes)``
or ``("blob", type, "sha256:<hex>@<scope>")`` (see ``nenjim.infrastructure.langgraph.values``)."""


DIGEST_PREFIX = "~sha256:"
"""How a key or indexed text too long for the store begins: the SHA-256 of the text follows.

A key that fits is the ids as a JSON list (it begins with ``[``), so the two
never meet; the full ids of a digested key are kept in its row.
"""


def digest_of(text: str) -> str:
    """``~sha256:<hex>`` of ``text`` (UTF-8, lone surrogates kept)."""
    return DIGEST_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def indexed(text: str) -> str:
    """``text`` as an indexed attribute: itself if it fits the store's limit, else its digest."""
    if len(text.encode("utf-8", "surrogatepass")) <= MAX_INDEXED_TEXT_BYTES:
        return text
    return digest_of(text)


def is_digest(text: str) -> bool:
    """Whether a key or attribute is a digest (its ids are kept in the row)."""
    return text.startswith(DIGEST_PREFIX)


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII escaped (so NUL and lone surrogates survive)."""
    return _encode(value)


# ``json.dumps`` with other than its default options builds an encoder per call: one, built
# once (every key of a read and every write renders through it).
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def loads(text: str, what: str) -> Any:
    """Parse stored JSON text; ``SerializationError`` naming ``what`` if it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as error:
        raise SerializationError(f"stored {what} is not JSON text: {error}") from error


MEMO_TEXT = 16 * 1024
"""Stored texts up to this many characters are parsed once per process and the result kept
(read only): a thread's newest checkpoint and its pending writes are read again and again."""
_MEMO_ITEMS = 4096


def payload_view(record: DurableRecord) -> Mapping[str, Any]:
    """A stored envelope's payload, to read only (parsed once for a small payload)."""
    text = record.payload_json
    if len(text) <= MEMO_TEXT:
        return _parsed_payload(text)
    return record.payload


@lru_cache(maxsize=_MEMO_ITEMS)
def _parsed_payload(text: str) -> Mapping[str, Any]:
    parsed: Mapping[str, Any] = json.loads(text)  # Canonical JSON: a JSON object
    return parsed


def parsed_once(text: str, what: str) -> Any:
    """:func:`loads`, the result kept for a small text: the caller only reads it."""
    if len(text) <= MEMO_TEXT:
        return _parsed_text(text, what)
    return loads(text, what)


@lru_cache(maxsize=_MEMO_ITEMS)
def _parsed_text(text: str, what: str) -> Any:
    return loads(text, what)


@lru_cache(maxsize=_MEMO_ITEMS)
def _frozen_parts(body: str, checkpoint_id: str) -> bytes:
    """A small entry's checkpoint and metadata as ``marshal`` bytes, made once per text.

    Loading them builds new dicts and lists for each caller, about twice as fast as parsing
    the JSON again (what ``json.loads`` returns, ``marshal`` writes and reads exactly).
    """
    data = parsed_once(body, f"checkpoint entry {checkpoint_id}")
    return marshal.dumps((data["checkpoint"], data["metadata"]))


def now() -> datetime:
    """The time a write is recorded: this process's clock, in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ThreadAddress:
    """One LangGraph thread and checkpoint namespace: one stream of the log."""

    thread_id: str
    checkpoint_ns: str

    def __post_init__(self) -> None:
        thread_id, checkpoint_ns = self.thread_id, self.checkpoint_ns
        # ASCII without NUL (the usual ids) is valid UTF-8: nothing more to check.
        if (
            thread_id.__class__ is str
            and checkpoint_ns.__class__ is str
            and thread_id.isascii()
            and checkpoint_ns.isascii()
            and "\0" not in thread_id
            and "\0" not in checkpoint_ns
        ):
            return
        for name in ("thread_id", "checkpoint_ns"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, got {type(value).__name__}")
            if "\0" in value:
                raise ValueError(f"{name} {value!r} contains NUL, which the store cannot index")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{name} {value!r} is not valid UTF-8") from None

    @property
    def thread(self) -> str:
        """The thread's own key: ``[thread_id]`` as JSON."""
        return self._key(self.thread_id)

    @property
    def stream(self) -> str:
        """The stream name: ``[thread_id, checkpoint_ns]`` as JSON."""
        return self._key(self.thread_id, self.checkpoint_ns)

    def checkpoint_key(self, checkpoint_id: str) -> str:
        """The key of a checkpoint's live row."""
        return self._key(self.thread_id, self.checkpoint_ns, checkpoint_id)

    def task_key(self, checkpoint_id: str, task_id: str) -> str:
        """The key of a task's pending writes against a checkpoint."""
        return self._key(self.thread_id, self.checkpoint_ns, checkpoint_id, task_id)

    def _key(self, *parts: str) -> str:
        """The parts as JSON (ASCII: non-ASCII is escaped), or its digest if that is longer
        than the store takes (the row keeps the full ids)."""
        return _key_of(*parts)

    @classmethod
    def of_key(cls, key: str) -> tuple[ThreadAddress, str]:
        """The address and checkpoint id a checkpoint row's key names (not a digest)."""
        return _of_key(key)

    @classmethod
    def of_row(cls, key: str, record: DurableRecord) -> tuple[ThreadAddress, str]:
        """The address and checkpoint id of a checkpoint's live row (its key, or the ids the
        row keeps when its key is a digest)."""
        if not is_digest(key):
            return cls.of_key(key)
        ids = payload_view(record).get("ids")
        if not (isinstance(ids, list) and len(ids) == 3 and all(isinstance(p, str) for p in ids)):
            raise SerializationError(f"stored checkpoint row {key!r} keeps no [thread, ns, id]")
        return cls(ids[0], ids[1]), ids[2]


@lru_cache(maxsize=_MEMO_ITEMS, typed=True)
def _key_of(*parts: str) -> str:
    """:meth:`ThreadAddress._key`, rendered once per ids (a thread's every read names its
    stream and its checkpoints' keys again; typed: a caller's ``True`` is not ``1``)."""
    key = dumps(list(parts))
    return key if len(key) <= MAX_KEY_BYTES else digest_of(key)


@lru_cache(maxsize=_MEMO_ITEMS)
def _of_key(key: str) -> tuple[ThreadAddress, str]:
    """:meth:`ThreadAddress.of_key`, parsed and checked once per key text (the result is
    immutable; a malformed key is not kept: it raises every time)."""
    parts = loads(key, "checkpoint key")
    if not (isinstance(parts, list) and len(parts) == 3 and all(isinstance(p, str) for p in parts)):
        raise SerializationError(f"stored checkpoint key {key!r} is not [thread, ns, id]")
    return ThreadAddress(parts[0], parts[1]), parts[2]


@dataclass(frozen=True, slots=True)
class Latest:
    """The newest live checkpoint of a thread: its id and its entry's stream position."""

    checkpoint_id: str
    position: int

    def dump(self) -> list[Any]:
        """JSON form."""
        return [self.checkpoint_id, self.position]

    @classmethod
    def load(cls, value: Any) -> Latest | None:
        """From JSON form (``None`` for a thread with no live checkpoint)."""
        if value is None:
            return None
        if not (isinstance(value, list) and len(value) == 2):
            raise SerializationError(f"stored latest pointer {value!r} is not [id, position]")
        checkpoint_id, position = value
        if not isinstance(checkpoint_id, str) or not isinstance(position, int):
            raise SerializationError(f"stored latest pointer {value!r} is not [id, position]")
        return cls(checkpoint_id, position)


class CheckpointEntry:
    """A checkpoint as its thread's stream holds it (channel values by reference).

    ``body`` is the stored JSON text; it is parsed once, for read-only use
    here, and :meth:`fresh` builds the checkpoint and metadata anew for a
    caller to own.
    """

    __slots__ = ("_data", "body", "checkpoint_id", "position")

    def __init__(self, checkpoint_id: str, body: str, position: int) -> None:
        self.checkpoint_id = checkpoint_id
        self.body = body
        self.position = position
        data = parsed_once(body, f"checkpoint entry {checkpoint_id}")
        if not isinstance(data, dict) or not data.keys() >= _CHECKPOINT_KEYS:
            raise SerializationError(f"stored checkpoint entry {checkpoint_id} is malformed")
        self._data: dict[str, Any] = data

    @classmethod
    def create(
        cls,
        *,
        checkpoint_id: str,
        parent_id: str | None,
        texts: tuple[str, str],
        values: Mapping[str, ValueRef],
        latest: Latest,
        position: int,
        copied_from: str | None = None,
        after_removal: bool = False,
    ) -> CheckpointEntry:
        """A new entry, recorded now; ``texts`` come from :func:`checkpoint_texts`.

        ``after_removal``: the stream had a removal before it (see :attr:`after_removal`).
        """
        body = (
            f'{{"checkpoint":{texts[0]},"metadata":{texts[1]},"values":{dumps(values)},'
            f'"parent_id":{dumps(parent_id)},"latest":{dumps(latest.dump())},'
            f'"recorded_at":{dumps(now().isoformat())},"copied_from":{dumps(copied_from)}'
            + (',"after_removal":true}' if after_removal else "}")
        )
        return cls(checkpoint_id, body, position)

    @property
    def after_removal(self) -> bool:
        """Whether the stream had a removal before this entry: a removal purges, and frees
        the ids of the entries it erased, so a put after one asks the live rows' history
        whether its checkpoint id was deleted (a checkpoint id is written once)."""
        return bool(self._data.get("after_removal", False))

    @property
    def parent_id(self) -> str | None:
        """The checkpoint this one continues, if any."""
        parent: str | None = self._data["parent_id"]
        return parent

    @property
    def latest(self) -> Latest:
        """The thread's newest live checkpoint once this entry was appended."""
        latest = Latest.load(self._data["latest"])
        if latest is None:
            raise SerializationError(f"checkpoint entry {self.checkpoint_id} names no latest")
        return latest

    @property
    def recorded_at(self) -> datetime:
        """When the writer recorded the entry."""
        return datetime.fromisoformat(self._data["recorded_at"])

    @property
    def copied_from(self) -> str | None:
        """The thread this checkpoint was copied from, if any."""
        source: str | None = self._data["copied_from"]
        return source

    @property
    def texts(self) -> tuple[str, str]:
        """The JSON texts of the checkpoint and its metadata, as :func:`checkpoint_texts` makes."""
        return dumps(self._data["checkpoint"]), dumps(self._data["metadata"])

    @property
    def metadata_view(self) -> Mapping[str, Any]:
        """The metadata, to read only."""
        metadata: Mapping[str, Any] = self._data["metadata"]
        return metadata

    @property
    def values(self) -> dict[str, ValueRef]:
        """Each channel's value reference."""
        refs = self._data["values"]
        return {channel: (ref[0], ref[1], ref[2]) for channel, ref in refs.items()}

    @property
    def versions(self) -> Mapping[str, Any]:
        """The checkpoint's channel versions, to read only."""
        versions: Mapping[str, Any] = self._data["checkpoint"].get("channel_versions", {})
        return versions

    def is_stored_as(self, stored: StreamEntry) -> bool:
        """Whether ``stored`` is this entry: the same position, id, kind and body (what
        :func:`load_entry` would decode it into, without decoding it again)."""
        record = stored.record
        return (
            stored.position == self.position
            and stored.id == self.checkpoint_id
            and record.record_type == CHECKPOINT_ENTRY
            and record.format_version == FORMAT_VERSION
            and payload_view(record).get("body") == self.body
        )

    def fresh(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The checkpoint (without values) and its metadata, built anew for the caller."""
        if len(self.body) <= MEMO_TEXT:
            fresh: tuple[dict[str, Any], dict[str, Any]] = marshal.loads(
                _frozen_parts(self.body, self.checkpoint_id)
            )
            return fresh
        data = loads(self.body, f"checkpoint entry {self.checkpoint_id}")
        return data["checkpoint"], data["metadata"]

    def copied(
        self,
        *,
        latest: Latest,
        position: int,
        copied_from: str,
        values: Mapping[str, ValueRef],
        after_removal: bool,
    ) -> CheckpointEntry:
        """This checkpoint as another thread's entry (its values as ``values``), recorded now."""
        return CheckpointEntry.create(
            checkpoint_id=self.checkpoint_id,
            parent_id=self.parent_id,
            texts=self.texts,
            values=values,
            latest=latest,
            position=position,
            copied_from=copied_from,
            after_removal=after_removal,
        )

    def moved(self, *, latest: Latest, position: int) -> CheckpointEntry:
        """This entry appended again at ``position`` (a purge erased the entries before it):
        everything kept, its time included, but the newest live checkpoint then."""
        data = loads(self.body, f"checkpoint entry {self.checkpoint_id}")
        data["latest"] = latest.dump()
        return CheckpointEntry(self.checkpoint_id, dumps(data), position)

    def append_entry(self) -> AppendEntry:
        """The stream entry to append."""
        record = DurableRecord(CHECKPOINT_ENTRY, FORMAT_VERSION, {"body": self.body})
        return AppendEntry(self.checkpoint_id, record)


_CHECKPOINT_KEYS = frozenset(
    {"checkpoint", "metadata", "values", "parent_id", "latest", "recorded_at", "copied_from"}
)


@dataclass(frozen=True, slots=True)
class Purged:
    """A checkpoint whose entry a purge erased: its id and the span it was live in."""

    checkpoint_id: str
    recorded_at: datetime
    """When its entry was recorded."""
    removed_at: datetime
    """When it left LangGraph's view (the purge's time, or an earlier delete's)."""

    def live_at(self, when: datetime) -> bool:
        """Whether the checkpoint was live at ``when``."""
        return self.recorded_at <= when < self.removed_at

    def dump(self) -> list[str]:
        """JSON form."""
        return [self.checkpoint_id, self.recorded_at.isoformat(), self.removed_at.isoformat()]

    @classmethod
    def load(cls, value: Any) -> Purged:
        """From JSON form."""
        checkpoint_id, recorded_at, removed_at = value
        return cls(
            str(checkpoint_id),
            datetime.fromisoformat(recorded_at),
            datetime.fromisoformat(removed_at),
        )


@dataclass(frozen=True, slots=True)
class RemovalEntry:
    """Checkpoints (and their pending writes, by task) taken out of LangGraph's view of a thread."""

    entry_id: str
    reason: str
    checkpoints: tuple[str, ...]
    writes: Mapping[str, tuple[str, ...]]
    latest: Latest | None
    recorded_at: datetime
    position: int = 0
    purged: tuple[Purged, ...] = ()
    """The checkpoints whose entries this removal's purge erased (carried on when a later
    purge erases this entry)."""

    def append_entry(self) -> AppendEntry:
        """The stream entry to append."""
        body: dict[str, Any] = {
            "reason": self.reason,
            "checkpoints": list(self.checkpoints),
            "writes": {cp: list(tasks) for cp, tasks in self.writes.items()},
            "latest": None if self.latest is None else self.latest.dump(),
            "recorded_at": self.recorded_at.isoformat(),
        }
        if self.purged:
            body["purged"] = [item.dump() for item in self.purged]
        record = DurableRecord(REMOVAL_ENTRY, FORMAT_VERSION, {"body": dumps(body)})
        return AppendEntry(self.entry_id, record)


ThreadEntry = CheckpointEntry | RemovalEntry


def checkpoint_texts(
    checkpoint_id: str, checkpoint: Mapping[str, Any], metadata: Mapping[str, Any]
) -> tuple[str, str]:
    """The JSON texts of a checkpoint (without values) and its metadata.

    ``SerializationError`` naming the checkpoint if either is not JSON.
    """
    texts = []
    for what, value in (("checkpoint", checkpoint), ("metadata", metadata)):
        try:
            texts.append(dumps(value))
        except (TypeError, ValueError) as error:
            raise SerializationError(
                f"the {what} of checkpoint {checkpoint_id} is not JSON: {error}"
            ) from None
    return texts[0], texts[1]


def load_entry(entry: StreamEntry) -> ThreadEntry:
    """A stored stream entry back as a checkpoint or removal entry."""
    record = entry.record
    kind = (record.record_type, record.format_version)
    body = payload_view(record).get("body")
    if not isinstance(body, str) or kind not in _ENTRY_KINDS:
        raise SerializationError(
            f"stored thread entry {entry.id!r} at position {entry.position} is not a "
            f"checkpoint or removal entry ({record.record_type} {record.format_version})"
        )
    if kind == (CHECKPOINT_ENTRY, FORMAT_VERSION):
        return CheckpointEntry(entry.id, body, entry.position)
    data = loads(body, f"removal entry {entry.id}")
    try:
        return RemovalEntry(
            entry_id=entry.id,
            reason=str(data["reason"]),
            checkpoints=tuple(str(cp) for cp in data["checkpoints"]),
            writes={str(cp): tuple(map(str, tasks)) for cp, tasks in data["writes"].items()},
            latest=Latest.load(data["latest"]),
            recorded_at=datetime.fromisoformat(data["recorded_at"]),
            position=entry.position,
            purged=tuple(Purged.load(item) for item in data.get("purged", ())),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SerializationError(
            f"stored removal entry {entry.id!r} at position {entry.position} is malformed: "
            f"{error!r}"
        ) from error


_ENTRY_KINDS = frozenset({(CHECKPOINT_ENTRY, FORMAT_VERSION), (REMOVAL_ENTRY, FORMAT_VERSION)})


def thread_key(thread_id: str) -> str:
    """The key of a thread id's row: ``[thread_id]`` as JSON (a thread id may be empty), or its
    digest (then the row keeps the thread id)."""
    return ThreadAddress(thread_id, "").thread


def thread_of_row(key: str, record: DurableRecord) -> str:
    """The thread id a thread row names (by its key, or kept in the row)."""
    if is_digest(key):
        thread_id = payload_view(record).get("thread_id")
        if not isinstance(thread_id, str):
            raise SerializationError(f"stored thread row {key!r} keeps no thread id")
        return thread_id
    parts = loads(key, "thread key")
    if not isinstance(parts, list) or [type(part) for part in parts] != [str]:
        raise SerializationError(f"stored thread key {key!r} is not [thread_id]")
    named: str = parts[0]
    return named


def thread_record(thread_id: str) -> DurableRecord:
    """The payload of a thread id's row in ``langgraph.thread_ids``: empty when the key says
    it all, else the thread id."""
    payload = {"thread_id": thread_id} if is_digest(thread_key(thread_id)) else {}
    return DurableRecord(THREAD_ID, FORMAT_VERSION, payload)


def pointer_record(position: int, ids: list[str] | None = None) -> DurableRecord:
    """The payload of a live checkpoint row: where its entry is in the thread's stream, and
    ``[thread_id, checkpoint_ns, checkpoint_id]`` when the row's key is a digest."""
    payload: dict[str, Any] = {"position": position}
    if ids is not None:
        payload["ids"] = list(ids)
    return DurableRecord(CHECKPOINT_POINTER, FORMAT_VERSION, payload)


def pointer_ids(record: DurableRecord) -> list[str] | None:
    """The ids a live checkpoint row keeps (``None`` when its key names them)."""
    ids = payload_view(record).get("ids")
    return None if ids is None else [str(part) for part in ids]


def pointer_position(record: DurableRecord) -> int:
    """The stream position a live checkpoint row points at."""
    pointer = record.record_type == CHECKPOINT_POINTER
    position = payload_view(record).get("position") if pointer else None
    if not isinstance(position, int) or isinstance(position, bool) or position < 1:
        raise SerializationError(f"stored checkpoint pointer is malformed: {record!r}")
    return position


@dataclass(frozen=True, slots=True)
class PendingWriteRecord:
    """One pending write (its value by reference) and when its task's record was written."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: ValueRef
    recorded_at: datetime

    @property
    def sort_key(self) -> tuple[str, str, int]:
        """LangGraph's order of a super-step's writes: task path, task id, index."""
        return (self.task_path, self.task_id, self.idx)


@dataclass(frozen=True, slots=True)
class TaskWrites:
    """The pending writes one task made against one checkpoint: one record, keyed by task.

    ``writes`` maps each write's index (its position in the task's batch,
    or LangGraph's negative index of a special channel) to ``(channel,
    task_path, value)``. A later batch of the same task adds to it; a
    revision of the record is the task's writes at the time it was written.
    """

    task_id: str
    writes: Mapping[int, tuple[str, str, ValueRef]]
    recorded_at: datetime
    where: tuple[str, str] | None = None
    """``(checkpoint_ns, checkpoint_id)`` when the row's attributes are digests of them."""
    _items: tuple[PendingWriteRecord, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """:meth:`items`, made at its first call: the record is immutable, and one read back
    is shared (see :meth:`load`) by every read of its checkpoint."""

    def refs(self) -> tuple[ValueRef, ...]:
        """The reference of every write's value."""
        return tuple(value for _, _, value in self.writes.values())

    def items(self) -> tuple[PendingWriteRecord, ...]:
        """The writes, one by one, in LangGraph's order (task path, index)."""
        made = self._items
        if made is None:
            task_id, recorded_at = self.task_id, self.recorded_at
            made = tuple(
                sorted(
                    (
                        PendingWriteRecord(task_id, path, idx, channel, value, recorded_at)
                        for idx, (channel, path, value) in self.writes.items()
                    ),
                    key=_sort_key,
                )
            )
            object.__setattr__(self, "_items", made)
        return made

    def record(self) -> DurableRecord:
        """The stored envelope."""
        body = {
            "task_id": self.task_id,
            "writes": [
                [idx, channel, path, list(value)]
                for idx, (channel, path, value) in sorted(self.writes.items())
            ],
            "recorded_at": self.recorded_at.isoformat(),
        }
        if self.where is not None:
            body["where"] = list(self.where)
        return DurableRecord(PENDING_WRITES, FORMAT_VERSION, {"body": dumps(body)})

    @classmethod
    def load(cls, record: DurableRecord) -> TaskWrites:
        """A stored envelope back as a task's writes (to read only: a small one is parsed once
        per process)."""
        kind = (record.record_type, record.format_version)
        if kind != (PENDING_WRITES, FORMAT_VERSION):
            raise SerializationError(
                f"stored pending writes have unknown type {record.record_type} "
                f"{record.format_version}"
            )
        text = record.payload_json
        if len(text) <= MEMO_TEXT:
            return _task_writes(text)
        return _task_writes.__wrapped__(text)


@lru_cache(maxsize=_MEMO_ITEMS)
def _task_writes(payload_json: str) -> TaskWrites:
    """The task's writes a pending-writes payload holds."""
    body = loads(payload_json, "pending writes").get("body")
    if not isinstance(body, str):
        raise SerializationError("stored pending writes have no body text")
    data = loads(body, "pending writes")
    try:
        writes: dict[int, tuple[str, str, ValueRef]] = {}
        for idx, channel, path, (kind_, type_, value) in data["writes"]:
            writes[int(idx)] = (str(channel), str(path), (str(kind_), str(type_), str(value)))
        where = data.get("where")
        return TaskWrites(
            str(data["task_id"]),
            MappingProxyType(writes),
            datetime.fromisoformat(data["recorded_at"]),
            None if where is None else (str(where[0]), str(where[1])),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SerializationError(f"stored pending writes are malformed: {error!r}") from error


def filed_under(row: RecordEntry, task: TaskWrites) -> tuple[str, str]:
    """The namespace and checkpoint id a pending write's row is filed under (kept in its record
    when its attributes are digests); ``task`` is the row's record."""
    if task.where is not None:
        return task.where
    ns, checkpoint_id = row.attributes["checkpoint_ns"], row.attributes["checkpoint_id"]
    if not isinstance(ns, str) or not isinstance(checkpoint_id, str):
        raise SerializationError(f"stored pending write {row.key} has malformed attributes")
    return ns, checkpoint_id


def sorted_writes(
    tasks: Iterable[TaskWrites], channels: Container[str] | None = None
) -> tuple[PendingWriteRecord, ...]:
    """Every write of the tasks (``channels``: to one of these only) in LangGraph's order
    (task path, task id, index)."""
    if channels is None:
        every = list(tasks)
        if len(every) == 1:  # one task's writes are sorted already
            return every[0].items()
        return tuple(sorted((w for task in every for w in task.items()), key=_sort_key))
    kept = (
        PendingWriteRecord(task.task_id, path, idx, channel, value, task.recorded_at)
        for task in tasks
        for idx, (channel, path, value) in task.writes.items()
        if channel in channels
    )
    return tuple(sorted(kept, key=_sort_key))


_sort_key = attrgetter("task_path", "task_id", "idx")
""":attr:`PendingWriteRecord.sort_key`, without a Python call per write."""
