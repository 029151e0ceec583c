"""What the saver stores: thread addresses and keys, and the three stored shapes.

- A **checkpoint entry** (stream ``langgraph.threads``, entry id = the
  checkpoint id): the checkpoint without its channel values, its metadata,
  its parent, a reference for each channel value, the newest live
  checkpoint of the thread once it is appended, and when it was recorded.
- A **removal entry** (same stream): which checkpoints (and which of their
  pending writes) a delete, a run delete or a prune took out of LangGraph's
  view, the newest live checkpoint left, and when.
- A **pending write** (records ``langgraph.writes``): task, path, index,
  channel, a reference to its value, and when it was recorded.

The checkpoint, its metadata and its value references are kept as JSON
*text* fields of the envelope: the storage layer renders every envelope in
Canonical JSON, and one text field renders at C speed where a nested
structure of versions and seen-versions would be walked value by value.
Every text is compact JSON with non-ASCII escaped, so any LangGraph string
(NUL and lone surrogates included) can be stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from infrastructure.storage import AppendEntry, DurableRecord, SerializationError, StreamEntry
from infrastructure.storage.scalars import MAX_KEY_BYTES

FORMAT_VERSION = "1.0"
CHECKPOINT_ENTRY = "langgraph.checkpoint"
REMOVAL_ENTRY = "langgraph.removal"
CHECKPOINT_POINTER = "langgraph.checkpoint_pointer"
PENDING_WRITE = "langgraph.pending_write"

ValueRef = tuple[str, str, str]
"""``("inline", type, base64 bytes)`` or ``("blob", type, "sha256:<hex>")``."""


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII escaped (so NUL and lone surrogates survive)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def loads(text: str, what: str) -> Any:
    """Parse stored JSON text; ``SerializationError`` naming ``what`` if it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as error:
        raise SerializationError(f"stored {what} is not JSON text: {error}") from error


def now() -> datetime:
    """The time a write is recorded: this process's clock, in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ThreadAddress:
    """One LangGraph thread and checkpoint namespace: one stream of the log."""

    thread_id: str
    checkpoint_ns: str

    def __post_init__(self) -> None:
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
    def stream(self) -> str:
        """The stream name: ``[thread_id, checkpoint_ns]`` as JSON."""
        return self._key(self.thread_id, self.checkpoint_ns)

    def checkpoint_key(self, checkpoint_id: str) -> str:
        """The key of a checkpoint's live row."""
        return self._key(self.thread_id, self.checkpoint_ns, checkpoint_id)

    def write_key(self, checkpoint_id: str, task_id: str, idx: int) -> str:
        """The key of one pending write."""
        return self._key(self.thread_id, self.checkpoint_ns, checkpoint_id, task_id, idx)

    def _key(self, *parts: str | int) -> str:
        key = dumps(list(parts))
        size = len(key.encode("utf-8"))
        if size > MAX_KEY_BYTES:
            raise ValueError(
                f"thread {self.thread_id!r} (namespace {self.checkpoint_ns!r}) makes a storage "
                f"key of {size} bytes; ids together may take at most {MAX_KEY_BYTES}"
            )
        return key

    @classmethod
    def of_key(cls, key: str) -> tuple[ThreadAddress, str]:
        """The address and checkpoint id a checkpoint row's key names."""
        parts = loads(key, "checkpoint key")
        if not (
            isinstance(parts, list) and len(parts) == 3 and all(isinstance(p, str) for p in parts)
        ):
            raise SerializationError(f"stored checkpoint key {key!r} is not [thread, ns, id]")
        return cls(parts[0], parts[1]), parts[2]


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


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """A checkpoint as its thread's stream holds it (channel values by reference).

    The checkpoint (without its values), its metadata and its value
    references are held as JSON text, and each property parses a fresh
    copy: no caller can change what another one reads.
    """

    checkpoint_id: str
    parent_id: str | None
    checkpoint_json: str
    metadata_json: str
    values_json: str
    latest: Latest
    recorded_at: datetime
    copied_from: str | None = None
    position: int = 0

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
    ) -> CheckpointEntry:
        """A new entry, recorded now; ``texts`` come from :func:`checkpoint_texts`."""
        return cls(
            checkpoint_id=checkpoint_id,
            parent_id=parent_id,
            checkpoint_json=texts[0],
            metadata_json=texts[1],
            values_json=dumps(values),
            latest=latest,
            recorded_at=now(),
            position=position,
        )

    @property
    def checkpoint(self) -> dict[str, Any]:
        """The checkpoint without its channel values (a fresh copy)."""
        value: dict[str, Any] = loads(self.checkpoint_json, "checkpoint")
        return value

    @property
    def metadata(self) -> dict[str, Any]:
        """The checkpoint's metadata (a fresh copy)."""
        value: dict[str, Any] = loads(self.metadata_json, "metadata")
        return value

    @property
    def values(self) -> dict[str, ValueRef]:
        """Each channel's value reference."""
        refs = loads(self.values_json, "value references")
        return {channel: (ref[0], ref[1], ref[2]) for channel, ref in refs.items()}

    @property
    def versions(self) -> dict[str, Any]:
        """The checkpoint's channel versions."""
        versions: dict[str, Any] = self.checkpoint.get("channel_versions", {})
        return versions

    def copied(self, *, latest: Latest, position: int, copied_from: str) -> CheckpointEntry:
        """This checkpoint as another thread's entry, recorded now."""
        return CheckpointEntry(
            self.checkpoint_id,
            self.parent_id,
            self.checkpoint_json,
            self.metadata_json,
            self.values_json,
            latest,
            now(),
            copied_from,
            position,
        )

    def append_entry(self) -> AppendEntry:
        """The stream entry to append."""
        payload = {
            "parent_id": self.parent_id,
            "checkpoint": self.checkpoint_json,
            "metadata": self.metadata_json,
            "values": self.values_json,
            "latest": self.latest.dump(),
            "recorded_at": self.recorded_at.isoformat(),
            "copied_from": self.copied_from,
        }
        return AppendEntry(
            self.checkpoint_id, DurableRecord(CHECKPOINT_ENTRY, FORMAT_VERSION, payload)
        )


@dataclass(frozen=True, slots=True)
class RemovalEntry:
    """Checkpoints (and their pending writes) taken out of LangGraph's view of a thread."""

    entry_id: str
    reason: str
    checkpoints: tuple[str, ...]
    writes: Mapping[str, tuple[tuple[str, int], ...]]
    latest: Latest | None
    recorded_at: datetime
    position: int = 0

    def append_entry(self) -> AppendEntry:
        """The stream entry to append."""
        payload = {
            "reason": self.reason,
            "checkpoints": list(self.checkpoints),
            "writes": dumps({cp: [list(w) for w in ws] for cp, ws in self.writes.items()}),
            "latest": None if self.latest is None else self.latest.dump(),
            "recorded_at": self.recorded_at.isoformat(),
        }
        return AppendEntry(self.entry_id, DurableRecord(REMOVAL_ENTRY, FORMAT_VERSION, payload))


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
    payload = record.payload
    try:
        if record.record_type == CHECKPOINT_ENTRY and record.format_version == FORMAT_VERSION:
            latest = Latest.load(payload["latest"])
            if latest is None:
                raise SerializationError("a checkpoint entry names no latest checkpoint")
            texts = [payload[name] for name in ("checkpoint", "metadata", "values")]
            if not all(isinstance(text, str) for text in texts):
                raise TypeError("checkpoint, metadata and values must be JSON text")
            return CheckpointEntry(
                checkpoint_id=entry.id,
                parent_id=payload["parent_id"],
                checkpoint_json=texts[0],
                metadata_json=texts[1],
                values_json=texts[2],
                latest=latest,
                recorded_at=datetime.fromisoformat(payload["recorded_at"]),
                copied_from=payload["copied_from"],
                position=entry.position,
            )
        if record.record_type == REMOVAL_ENTRY and record.format_version == FORMAT_VERSION:
            writes = loads(payload["writes"], "removed writes")
            return RemovalEntry(
                entry_id=entry.id,
                reason=payload["reason"],
                checkpoints=tuple(payload["checkpoints"]),
                writes={cp: tuple((t, int(i)) for t, i in ws) for cp, ws in writes.items()},
                latest=Latest.load(payload["latest"]),
                recorded_at=datetime.fromisoformat(payload["recorded_at"]),
                position=entry.position,
            )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SerializationError(
            f"stored thread entry {entry.id!r} at position {entry.position} is malformed: {error!r}"
        ) from error
    raise SerializationError(
        f"stored thread entry {entry.id!r} has unknown type "
        f"{record.record_type} {record.format_version}"
    )


def pointer_record(position: int) -> DurableRecord:
    """The payload of a live checkpoint row: where its entry is in the thread's stream."""
    return DurableRecord(CHECKPOINT_POINTER, FORMAT_VERSION, {"position": position})


def pointer_position(record: DurableRecord) -> int:
    """The stream position a live checkpoint row points at."""
    position = record.payload.get("position") if record.record_type == CHECKPOINT_POINTER else None
    if not isinstance(position, int) or isinstance(position, bool) or position < 1:
        raise SerializationError(f"stored checkpoint pointer is malformed: {record!r}")
    return position


@dataclass(frozen=True, slots=True)
class PendingWriteRecord:
    """One pending write as stored (its value by reference)."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: ValueRef
    recorded_at: datetime

    def record(self) -> DurableRecord:
        """The stored envelope."""
        payload = {
            "task_id": self.task_id,
            "task_path": self.task_path,
            "idx": self.idx,
            "channel": self.channel,
            "value": list(self.value),
            "recorded_at": self.recorded_at.isoformat(),
        }
        return DurableRecord(PENDING_WRITE, FORMAT_VERSION, payload)

    @classmethod
    def load(cls, record: DurableRecord) -> PendingWriteRecord:
        """A stored envelope back as a pending write."""
        if record.record_type != PENDING_WRITE or record.format_version != FORMAT_VERSION:
            kind = f"{record.record_type} {record.format_version}"
            raise SerializationError(f"stored pending write has unknown type {kind}")
        payload = record.payload
        try:
            kind, type_, data = payload["value"]
            return cls(
                str(payload["task_id"]),
                str(payload["task_path"]),
                int(payload["idx"]),
                str(payload["channel"]),
                (str(kind), str(type_), str(data)),
                datetime.fromisoformat(payload["recorded_at"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise SerializationError(f"stored pending write is malformed: {error!r}") from error

    @property
    def sort_key(self) -> tuple[str, str, int]:
        """LangGraph's order of a super-step's writes: task path, task id, index."""
        return (self.task_path, self.task_id, self.idx)


def write_ids(writes: Sequence[PendingWriteRecord]) -> tuple[tuple[str, int], ...]:
    """``(task_id, idx)`` of each write, the part of its key a removal entry lists."""
    return tuple((w.task_id, w.idx) for w in writes)
