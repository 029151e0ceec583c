"""The log: ``storage_events``, one log stream per record key, SPI stream and blob.

Each event is a row ``(originator_id, originator_version, topic, state,
notification_id)`` as in the ``eventsourcing`` recorder tables. The
originator id is a UUIDv5 of the resource and key, so a key keeps one log
stream for its whole life (a record re-inserted after a delete continues
it). ``state`` is compact JSON (UTF-8) naming the resource and key, so the
log alone can rebuild every projection table.

Writes insert at an expected version; the primary key
``(originator_id, originator_version)`` is the compare-and-swap, and
:func:`append` reports a writer that lost it instead of raising.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any

from nenjim.infrastructure.storage import canonical_json
from nenjim.infrastructure.storage.entries import BlobEntry, RecordEntry, StreamEntry
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.sql.dialect import Dialect, dumps
from nenjim.infrastructure.storage.sql.session import Session

_LONG_DIGITS = re.compile(b"[0-9]{16}")
"""A run of digits as long as the shortest integer past 2^53-1."""

_string: Callable[[str], str] = encode_basestring
"""A JSON string as :func:`dumps` writes it (non-ASCII kept as is)."""

NAMESPACE = uuid.UUID("0b8f6b0e-5f2a-5c57-9d1e-6e656e6a696d")
"""The fixed UUIDv5 namespace of every storage log stream."""

RECORD_INSERTED = "nenjim.storage:RecordInserted"
RECORD_REPLACED = "nenjim.storage:RecordReplaced"
RECORD_DELETED = "nenjim.storage:RecordDeleted"
STREAM_ENTRY_APPENDED = "nenjim.storage:StreamEntryAppended"
STREAM_DELETED = "nenjim.storage:StreamDeleted"
BLOB_PUT = "nenjim.storage:BlobPut"

RECORD_WRITES = (RECORD_INSERTED, RECORD_REPLACED)

EVENTS_PER_STATEMENT = 500
"""The most events one multi-row ``INSERT`` carries (5 parameters each, far below the
databases' limits on parameters per statement)."""


_NAMESPACE_BYTES = NAMESPACE.bytes
_KEEP = ~((0xF000 << 64) | (0xC000 << 48))
"""Every bit of a SHA-1's first 16 bytes but the version's four and the variant's two."""
_VERSION_5 = (5 << 76) | (0x8000 << 48)
"""The version (5) and the variant (RFC 9562) bits of a UUIDv5."""


def name_based(name: str) -> uuid.UUID:
    """``uuid.uuid5(NAMESPACE, name)``, without the constructor's parsing of its arguments:
    the first 16 bytes of the SHA-1 of the namespace's bytes and the name's UTF-8, with
    the version and variant bits set. A new record key pays this on every insert."""
    data = _NAMESPACE_BYTES + name.encode("utf-8")
    digest = hashlib.sha1(data, usedforsecurity=False).digest()
    made = object.__new__(uuid.UUID)
    object.__setattr__(made, "int", (int.from_bytes(digest[:16]) & _KEEP) | _VERSION_5)
    object.__setattr__(made, "is_safe", uuid.SafeUUID.unknown)
    return made


_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}
"""The hex digit that starts a UUIDv5's fourth group, by the SHA-1's digit there: the
variant's two bits (``10``) over the digit's two low ones."""


def name_based_text(name: str) -> str:
    """``str(name_based(name))``, written from the SHA-1's hex digits: no ``UUID``, no
    integer. The version digit (``5``) and the variant's bits replace the digest's."""
    data = _NAMESPACE_BYTES + name.encode("utf-8")
    digits = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    return (
        f"{digits[:8]}-{digits[8:12]}-5{digits[13:16]}-"
        f"{_VARIANT_DIGIT[digits[16]]}{digits[17:20]}-{digits[20:32]}"
    )


# The stream ids are cached: a record replaced or a stream appended to is usually
# written again.
@functools.lru_cache(maxsize=4096)
def record_stream(resource_id: str, key: str) -> uuid.UUID:
    """The log stream of record ``key``."""
    return name_based(f"records\0{resource_id}\0{key}")


def record_originator(dialect: Dialect, resource_id: str, key: str) -> object:
    """The ``originator_id`` parameter of record ``key``'s log stream, as ``dialect``
    binds it. Where it is text, it is written without the ``UUID``: an insert's key is
    usually new, so :func:`record_stream`'s cache would only miss."""
    if dialect.text_originators:
        return name_based_text(f"records\0{resource_id}\0{key}")
    return dialect.originator(record_stream(resource_id, key))


@functools.lru_cache(maxsize=4096)
def entry_stream(resource_id: str, stream: str) -> uuid.UUID:
    """The log stream of SPI stream ``stream``."""
    return name_based(f"streams\0{resource_id}\0{stream}")


def blob_stream(resource_id: str, key: str) -> uuid.UUID:
    """The log stream of blob ``key`` (one event: blobs are written once)."""
    return name_based(f"blobs\0{resource_id}\0{key}")


def blob_originator(dialect: Dialect, resource_id: str, key: str) -> object:
    """The ``originator_id`` parameter of blob ``key``'s log stream, as ``dialect`` binds
    it; where it is text, written without the ``UUID`` (every put names a new key)."""
    if dialect.text_originators:
        return name_based_text(f"blobs\0{resource_id}\0{key}")
    return dialect.originator(blob_stream(resource_id, key))


def append(
    session: Session,
    originator: uuid.UUID,
    version: int,
    topic: str,
    state: Mapping[str, Any] | str,
) -> bool:
    """Insert one event at ``version`` (``state`` a mapping or its JSON text); False if
    that version already exists."""
    return append_at(session, session.dialect.originator(originator), version, topic, state)


def append_at(
    session: Session,
    originator: object,
    version: int,
    topic: str,
    state: Mapping[str, Any] | str | bytes,
) -> bool:
    """:func:`append`, ``originator`` already bound as the dialect binds it
    (:func:`record_originator`, :func:`blob_originator`); ``state`` may also be the
    stored bytes themselves (:func:`blob_state`)."""
    if isinstance(state, bytes):
        body = state
    else:
        body = (state if isinstance(state, str) else dumps(dict(state))).encode("utf-8")
    return session.execute(session.dialect.append_event, (originator, version, topic, body)) == 1


def send_many(
    session: Session,
    originator: object,
    topic: str,
    after: int,
    states: Sequence[bytes],
    *,
    anchor: tuple[str, ...] = (),
) -> list[Any]:
    """Insert one event per state (its JSON, UTF-8) at the versions following ``after``,
    in as few statements as the database allows, inside :meth:`Session.pipeline`; their
    cursors. Together their ``rowcount``\\ s fall short of the events if any of those
    versions already existed, or if ``anchor`` (a ``(resource, key)`` records row each
    statement looks for) is missing."""
    dialect = session.dialect
    cursors = []
    for start in range(0, len(states), EVENTS_PER_STATEMENT):
        chunk = states[start : start + EVENTS_PER_STATEMENT]
        template = dialect.append_events(len(chunk), anchored=bool(anchor))
        params = (originator, after + start, topic, *chunk, *anchor)
        cursors.append(session.send(template, params))
    return cursors


def history(session: Session, originator: uuid.UUID) -> list[tuple[str, dict[str, Any]]]:
    """Every event of ``originator`` in version order, as ``(topic, state)``."""
    rows = session.all(
        "SELECT topic, state FROM {events} WHERE originator_id = ? ORDER BY originator_version",
        (session.dialect.originator(originator),),
    )
    return [(str(topic), decode_event(str(topic), state)) for topic, state in rows]


def decode(state: bytes | memoryview) -> dict[str, Any]:
    """An event's state; ``SerializationError`` if it is not a JSON object.

    Its ``payload`` (a record's or an entry's, Canonical JSON text inside the
    state) reads as :func:`canonical_json.loads` reads it: ``1e16``, written
    ``10000000000000000``, is the float, not an integer past 2^53-1.
    """
    data = bytes(state)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise SerializationError(f"stored event state is not JSON: {error!r}") from error
    if not isinstance(value, dict):
        raise SerializationError("stored event state is not a JSON object")
    # Only a run of 16 digits can be an integer past 2^53-1: most states need no walk.
    if "payload" in value and _LONG_DIGITS.search(data):
        value["payload"] = canonical_json.whole_floats(value["payload"])
    return value


def decode_event(topic: str, state: bytes | memoryview) -> dict[str, Any]:
    """The state of an event of ``topic``: :func:`decode_blob` for a blob put, else
    :func:`decode`."""
    return decode_blob(state) if topic == BLOB_PUT else decode(state)


def decode_blob(state: bytes | memoryview) -> dict[str, Any]:
    """A blob put's state, its bytes under ``data``; ``SerializationError`` if it is not one.

    It is stored in one of two forms: :func:`blob_state`'s (a JSON header, a newline,
    the bytes), or, in a store written before a blob's bytes were kept once, a JSON
    object holding them base64-encoded under ``data``.
    """
    data = bytes(state)
    cut = data.find(b"\n")  # compact JSON holds no newline: only the new form has one
    if cut < 0:
        value = decode(data)
        try:
            value["data"] = base64.b64decode(value["data"], validate=True)
        except (KeyError, TypeError, binascii.Error) as error:
            raise SerializationError(f"stored blob state has no base64 bytes: {error!r}") from error
        return value
    value = decode(data[:cut])
    body = data[cut + 1 :]
    if value.get("size") != len(body):
        raise SerializationError(
            f"stored blob state holds {len(body)} bytes where its header says {value.get('size')!r}"
        )
    value["data"] = body
    return value


def attributes_text(entry: RecordEntry) -> str:
    """The JSON text of a record's attributes, as its row and its event hold them."""
    return dumps(dict(entry.attributes))


def record_state(resource_id: str, entry: RecordEntry, attributes: str) -> str:
    """The state of a record write, as JSON text: the whole stored row, ``attributes``
    its attributes' text (:func:`attributes_text`).

    The text :func:`dumps` would write for ``{resource, key, revision, attributes,
    recorded_at, record_type, format_version, payload}``, assembled from pieces (each
    string escaped as ``dumps`` escapes it), with the payload's Canonical JSON text
    spliced in: every record write builds one.
    """
    return "".join(
        (
            '{"resource":',
            _string(resource_id),
            ',"key":',
            _string(entry.key),
            ',"revision":',
            str(entry.revision),
            ',"attributes":',
            attributes,
            ',"recorded_at":"',
            datetime.now(UTC).isoformat(),
            '"',
            _envelope_head(entry.record.record_type, entry.record.format_version),
            entry.record.payload_json,
            "}",
        )
    )


def tombstone_state(resource_id: str, key: str, revision: int) -> dict[str, Any]:
    """The state of a record delete: the key and the revision it had."""
    return {"resource": resource_id, "key": key, "revision": revision}


def entry_state(resource_id: str, stream: str, entry: StreamEntry) -> str:
    """The state of one appended stream entry, as JSON text."""
    return entry_states(resource_id, stream)(entry)


def entry_states(resource_id: str, stream: str) -> Callable[[StreamEntry], str]:
    """:func:`entry_state` for many entries of one stream: the text :func:`dumps` would
    write for ``{resource, stream, position, id, record_type, format_version, payload}``,
    assembled from pieces (the shared head made once, each string escaped as ``dumps``
    escapes it), with the payload's Canonical JSON text spliced in."""
    head = _entry_head(resource_id, stream)

    def state(entry: StreamEntry) -> str:
        record = entry.record
        return "".join(
            (
                head,
                str(entry.position),
                ',"id":',
                _string(entry.id),
                _envelope_head(record.record_type, record.format_version),
                record.payload_json,
                "}",
            )
        )

    return state


@functools.lru_cache(maxsize=1024)
def _envelope_head(record_type: str, format_version: str) -> str:
    """The members of a record's or an entry's envelope up to its payload's text (which
    ends the state, before the closing brace): made once per record type and version."""
    return "".join(
        (
            ',"record_type":',
            _string(record_type),
            ',"format_version":',
            _string(format_version),
            ',"payload":',
        )
    )


@functools.lru_cache(maxsize=4096)
def _entry_head(resource_id: str, stream: str) -> str:
    """The text every entry state of one stream starts with (up to its position)."""
    return dumps({"resource": resource_id, "stream": stream})[:-1] + ',"position":'


def stream_deleted_state(resource_id: str, stream: str, head: int) -> dict[str, Any]:
    """The state of a stream delete: the head the stream had."""
    return {"resource": resource_id, "stream": stream, "head": head}


def blob_state(resource_id: str, blob: BlobEntry) -> bytes:
    """The state of a blob put: a JSON header (resource, key, attributes and the number of
    bytes), a newline, then the bytes as they are. This is the one copy of a blob's bytes:
    its ``storage_blobs`` row holds none (:mod:`~nenjim.infrastructure.storage.sql.blobs`)."""
    header = {
        "resource": resource_id,
        "key": blob.key,
        "attributes": dict(blob.attributes),
        "size": len(blob.data),
    }
    return dumps(header).encode("utf-8") + b"\n" + blob.data
