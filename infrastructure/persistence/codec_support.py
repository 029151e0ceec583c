"""Envelope, payload and cross-check helpers shared by the record codecs.

Every failure here is a :class:`~nenjim.domain.persistence.errors.SerializationError`.
The value constructors hold the field rules; the helpers check what the
values cannot see: the envelope, the exact payload key set, the timestamp
text and the storage entry around the record.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nenjim.infrastructure.persistence.errors import SerializationError
from nenjim.infrastructure.storage import AppendEntry, DurableRecord, RecordEntry, StreamEntry
from nenjim.infrastructure.storage import SerializationError as StorageSerializationError


@dataclass(frozen=True, slots=True)
class PayloadSchema:
    """The shape of a payload object: its exact keys and which of them hold timestamps.

    ``tolerated`` keys are legacy keys accepted on read and dropped; they are
    never written.
    """

    label: str
    keys: tuple[str, ...]
    timestamps: frozenset[str] = frozenset()
    tolerated: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class RecordFormat:
    """A record type: its name, its current format version and its payload schema."""

    record_type: str
    format_version: str
    schema: PayloadSchema

    @property
    def label(self) -> str:
        """The value's name, for messages."""
        return self.schema.label


def format_timestamp(value: datetime) -> str:
    """ISO-8601 text in UTC with microseconds and a ``Z`` suffix."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextmanager
def encoding(label: str) -> Iterator[None]:
    """Re-raise value and envelope failures as ``SerializationError("cannot encode ...")``."""
    try:
        yield
    except (ValueError, TypeError, StorageSerializationError) as error:
        raise SerializationError(f"cannot encode {label}: {error}") from error


@contextmanager
def decoding(label: str) -> Iterator[None]:
    """Re-raise value and envelope failures as ``SerializationError("cannot decode ...")``."""
    try:
        yield
    except (ValueError, TypeError, StorageSerializationError) as error:
        raise SerializationError(f"cannot decode {label}: {error}") from error


def require_value(value: object, kind: type, label: str) -> None:
    """Refuse to encode anything but a ``kind``."""
    if not isinstance(value, kind):
        raise SerializationError(
            f"cannot encode {label}: expected a {kind.__name__}, got {type(value).__name__}"
        )


def build_record(fmt: RecordFormat, payload: dict[str, Any]) -> DurableRecord:
    """The envelope of ``payload`` in the current format of ``fmt``."""
    with encoding(fmt.label):
        return DurableRecord(fmt.record_type, fmt.format_version, payload)


def record_of_entry(source: object, label: str) -> tuple[RecordEntry | None, DurableRecord]:
    """Split a ``RecordEntry`` (or a bare ``DurableRecord``) into entry and envelope."""
    if isinstance(source, RecordEntry):
        return source, source.record
    if isinstance(source, DurableRecord):
        return None, source
    raise SerializationError(
        f"cannot decode {label}: expected a RecordEntry or DurableRecord, "
        f"got {type(source).__name__}"
    )


def record_of_stream_entry(source: object, label: str) -> tuple[StreamEntry | None, DurableRecord]:
    """Split a ``StreamEntry`` (or a bare ``DurableRecord``) into entry and envelope."""
    if isinstance(source, StreamEntry):
        return source, source.record
    if isinstance(source, DurableRecord):
        return None, source
    raise SerializationError(
        f"cannot decode {label}: expected a StreamEntry or DurableRecord, "
        f"got {type(source).__name__}"
    )


def payload_fields(record: DurableRecord, fmt: RecordFormat) -> dict[str, Any]:
    """The payload of ``record`` as value fields, after the envelope and key checks.

    The record type and format version must match exactly: there is no
    upgrade on read.
    """
    if record.record_type != fmt.record_type:
        raise SerializationError(
            f"cannot decode {fmt.label}: record type {record.record_type!r} "
            f"is not {fmt.record_type!r}"
        )
    if record.format_version != fmt.format_version:
        raise SerializationError(
            f"cannot decode {fmt.label}: {fmt.record_type} format version "
            f"{record.format_version!r} is not the current {fmt.format_version!r}"
        )
    return object_fields(record.payload, fmt.schema)


def object_fields(payload: object, schema: PayloadSchema) -> dict[str, Any]:
    """The members of a payload object as value fields, timestamps parsed.

    The keys must be exactly ``schema.keys`` (``tolerated`` keys are
    dropped).
    """
    if not isinstance(payload, dict):
        raise SerializationError(
            f"cannot decode {schema.label}: payload must be an object, got {type(payload).__name__}"
        )
    present = set(payload) - schema.tolerated
    missing = sorted(set(schema.keys) - present)
    unknown = sorted(present - set(schema.keys))
    if missing or unknown:
        raise SerializationError(
            f"cannot decode {schema.label}: payload keys differ "
            f"(missing {missing}, unknown {unknown})"
        )
    return {
        key: _timestamp(payload[key], key, schema.label)
        if key in schema.timestamps
        else payload[key]
        for key in schema.keys
    }


def object_list(value: object, what: str, label: str) -> list[Any]:
    """A payload member that must be a JSON array."""
    if not isinstance(value, list):
        raise SerializationError(
            f"cannot decode {label}: {what} must be an array, got {type(value).__name__}"
        )
    return value


def check_record_entry(
    entry: RecordEntry | None,
    label: str,
    *,
    key: str,
    revision: int,
    attributes: Mapping[str, str | int | bool | None],
) -> None:
    """The stored key, revision and attributes must agree with the decoded value."""
    if entry is None:
        return
    check_agrees(
        label,
        (
            ("entry key", key, entry.key),
            ("entry revision", revision, entry.revision),
            ("entry attributes", dict(attributes), dict(entry.attributes)),
        ),
    )


def check_agrees(label: str, checks: Sequence[tuple[str, object, object]]) -> None:
    """Each ``(what, decoded, other)``: ``other`` must be ``None`` (unchecked) or equal ``decoded``.

    A mismatch means storage returned another identity, revision or
    metadata than the payload carries.
    """
    for what, decoded, other in checks:
        if other is not None and other != decoded:
            raise SerializationError(
                f"cannot decode {label}: {what} {other!r} does not match the payload's {decoded!r}"
            )


def _timestamp(value: object, key: str, label: str) -> datetime | None:
    # None is left to the value's own check: only some timestamps are optional.
    if value is None:
        return None
    if not isinstance(value, str):
        raise SerializationError(
            f"cannot decode {label}: {key} must be an ISO-8601 string, got {type(value).__name__}"
        )
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise SerializationError(f"cannot decode {label}: {key}: {error}") from error
    if parsed.utcoffset() is None:
        raise SerializationError(f"cannot decode {label}: {key} {value!r} has no UTC offset")
    return parsed


def written_row(
    entry: RecordEntry,
    label: str,
    *,
    key: str,
    revision: int,
    attributes: Mapping[str, str | int | bool | None],
    record: DurableRecord,
) -> RecordEntry:
    """The store's answer to a write of one row, which must be exactly that row.

    Called inside the write's atomic step: a different answer (another key,
    revision, attribute or payload) raises ``SerializationError`` and so rolls
    the write back.
    """
    if (entry.key, entry.revision, _typed(entry.attributes), entry.record) != (
        key,
        revision,
        _typed(attributes),
        record,
    ):
        raise SerializationError(
            f"{label} {key!r}: the store answered the write at revision {revision} with "
            f"a different row ({entry.key!r} at revision {entry.revision})"
        )
    return entry


def written_entries(
    entries: Sequence[StreamEntry],
    label: str,
    *,
    stream: str,
    expected_head: int,
    batch: Sequence[AppendEntry],
) -> Sequence[StreamEntry]:
    """The store's answer to an append, which must be the batch at the next positions."""
    answered = [(e.position, e.id, e.record) for e in entries]
    written = [
        (expected_head + offset, entry.id, entry.record)
        for offset, entry in enumerate(batch, start=1)
    ]
    if answered != written:
        raise SerializationError(
            f"{label} {stream!r}: the store answered the append at position {expected_head} "
            f"with other entries ({[(p, i) for p, i, _ in answered]})"
        )
    return entries


def _typed(attributes: Mapping[str, object]) -> dict[str, tuple[type, object]]:
    # True == 1 in Python; stored attributes must keep their type.
    return {name: (type(value), value) for name, value in attributes.items()}
