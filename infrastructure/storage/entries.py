"""Immutable entry values: what goes into and comes out of records, streams and blobs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.durable_record import DurableRecord
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.scalars import validate_key, validate_revision

Attributes = Mapping[str, str | int | bool | None]


def frozen_attributes(values: Mapping[str, Any]) -> Attributes:
    """A read-only copy of an attribute map."""
    return MappingProxyType(dict(values))


def _record(value: Any) -> DurableRecord:
    if not isinstance(value, DurableRecord):
        raise SerializationError(f"record must be a DurableRecord, got {type(value).__name__}")
    return value


@immutable
@dataclass(frozen=True, slots=True)
class RecordEntry:
    """A stored record: key, revision, attributes and envelope."""

    key: str
    revision: int
    attributes: Attributes
    record: DurableRecord

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", validate_key(self.key))
        validate_revision(self.revision)
        object.__setattr__(self, "attributes", frozen_attributes(self.attributes))
        _record(self.record)

    def fresh(self) -> RecordEntry:
        """An equal entry with its own record and attribute map."""
        # Of values this entry's construction validated: not checked a second time.
        return validated_record_entry(
            self.key, self.revision, frozen_attributes(self.attributes), self.record.copy()
        )


def validated_record_entry(
    key: str, revision: int, attributes: Attributes, record: DurableRecord
) -> RecordEntry:
    """A :class:`RecordEntry` of values already validated, checked and copied no second time:
    ``attributes`` read-only (as ``Resource.validate_attributes`` returns them; entries
    read back from the same stored text may share them). Every write and every SQL row
    read builds one; anything else builds ``RecordEntry(...)``."""
    entry = _new(RecordEntry)
    _set_key(entry, key)
    _set_revision(entry, revision)
    _set_attributes(entry, attributes)
    _set_record_entry_record(entry, record)
    return entry


@immutable
@dataclass(frozen=True, slots=True)
class RecordedEntry(RecordEntry):
    """A revision from a record's history, with the time the log recorded it."""

    recorded_at: datetime

    def fresh(self) -> RecordedEntry:
        """An equal entry with its own record and attribute map."""
        return RecordedEntry(
            self.key, self.revision, dict(self.attributes), self.record.copy(), self.recorded_at
        )


@immutable
@dataclass(frozen=True, slots=True, init=False)
class AppendEntry:
    """One entry to append to a stream."""

    id: str
    record: DurableRecord

    def __init__(self, id: str, record: DurableRecord) -> None:
        # The slots set directly: a caller builds one per entry of an append.
        _set_append_id(self, validate_key(id, "entry id"))
        _set_append_record(self, _record(record))


@immutable
@dataclass(frozen=True, slots=True)
class StreamEntry:
    """A stored stream entry; positions start at 1."""

    position: int
    id: str
    record: DurableRecord

    def __post_init__(self) -> None:
        validate_revision(self.position, "position")
        object.__setattr__(self, "id", validate_key(self.id, "entry id"))
        _record(self.record)

    def fresh(self) -> StreamEntry:
        """An equal entry with its own record."""
        return StreamEntry.checked(self.position, self.id, self.record.copy())

    @classmethod
    def checked(cls, position: int, entry_id: str, record: DurableRecord) -> StreamEntry:
        """An entry of values the caller already validated (a position counted from a
        checked head, the id and record of an ``AppendEntry``): no second check."""
        entry = _new(cls)
        _set_position(entry, position)
        _set_id(entry, entry_id)
        _set_record(entry, record)
        return entry

    @staticmethod
    def numbered(first: int, entries: Sequence[AppendEntry]) -> list[StreamEntry]:
        """The entries an append of ``entries`` stores, at positions ``first, first + 1,
        ...``, each with a copy of its record; not checked again (their ``AppendEntry``
        was), which a 100-entry append would pay 100 times."""
        numbered = []
        for position, appended in enumerate(entries, first):
            entry = _new(StreamEntry)
            _set_position(entry, position)
            _set_id(entry, appended.id)
            _set_record(entry, appended.record.copy())
            numbered.append(entry)
        return numbered


# The slots' own setters, for entries of values already validated: past the frozen
# dataclass's guard, without object.__setattr__'s lookup of each name.
_new = object.__new__
_set_append_id = AppendEntry.__dict__["id"].__set__
_set_append_record = AppendEntry.__dict__["record"].__set__
_set_position = StreamEntry.__dict__["position"].__set__
_set_id = StreamEntry.__dict__["id"].__set__
_set_record = StreamEntry.__dict__["record"].__set__
_set_key = RecordEntry.__dict__["key"].__set__
_set_revision = RecordEntry.__dict__["revision"].__set__
_set_attributes = RecordEntry.__dict__["attributes"].__set__
_set_record_entry_record = RecordEntry.__dict__["record"].__set__


@immutable
@dataclass(frozen=True, slots=True)
class BlobEntry:
    """Content bytes with their attributes."""

    key: str
    data: bytes
    attributes: Attributes = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", validate_key(self.key))
        if not isinstance(self.data, bytes | bytearray | memoryview):
            raise TypeError(f"blob data must be bytes, got {type(self.data).__name__}")
        object.__setattr__(self, "data", bytes(self.data))
        object.__setattr__(self, "attributes", frozen_attributes(self.attributes))

    def fresh(self) -> BlobEntry:
        """An equal entry with its own attribute map."""
        return BlobEntry(self.key, self.data, dict(self.attributes))
