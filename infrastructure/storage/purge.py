"""Purges: what an erasure leaves in the storage log in place of what it removed.

A purge removes the payloads of one key (a record, a stream, or a stream's
entries before a position, a blob) from the inline tables and from the log
in one transaction. The log keeps its shape: every removed event stays at
its place (its notification id, its stream version), so positions, versions
and followers are unchanged, but its topic becomes :data:`PURGED` and its
state a stub that holds no payload, only the digest of the state it
replaced::

    {"digest": "<sha-256 of the removed state>", "marker": 3, "topic": "<its topic>"}

The purge appends one marker event (:data:`PURGE`) to the key's purge stream
(:func:`purge_stream`): which key, how many events it removed and the digest
of what it removed (:func:`removal_digest` over the stubs, in version
order)::

    {"before": null, "digest": "...", "events": 4, "key": "t1", "kind": "records",
     "resource": "app.items"}

An audit checks each marker against its stubs; a replay skips the stubs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.infrastructure.storage.sql.events import (
    BLOB_PUT,
    RECORD_INSERTED,
    RECORD_REPLACED,
    STREAM_ENTRY_APPENDED,
    name_based,
)

PURGED = "nenjim.storage:Purged"
"""The topic of an event whose payload a purge removed (a stub)."""

PURGE = "nenjim.storage:Purge"
"""The topic of a purge's marker."""

PAYLOAD_TOPICS = (RECORD_INSERTED, RECORD_REPLACED, STREAM_ENTRY_APPENDED, BLOB_PUT)
"""The topics whose states carry payloads: the events a purge removes."""

KINDS = ("records", "streams", "blobs")


@immutable
@dataclass(frozen=True, slots=True)
class Purge:
    """What one purge removed: the key, how many events, the digest of their states."""

    kind: str
    """``records``, ``streams`` or ``blobs``."""
    resource: str
    key: str
    """The record or blob key, or the stream."""
    events: int
    digest: str
    """:func:`removal_digest` of the removed events."""
    before: int | None = None
    """For a stream's entries before a position: that position; else ``None``."""


@immutable
@dataclass(frozen=True, slots=True)
class Removed:
    """One event a purge removes: its version in its log stream, its topic and state."""

    version: int
    topic: str
    state: bytes


def purge_stream(kind: str, resource_id: str, key: str) -> Any:
    """The log stream (a UUID) of the markers of ``key``'s purges."""
    return name_based(f"purges\0{kind}\0{resource_id}\0{key}")


def stub(marker: int, removed: Removed) -> str:
    """The state, as JSON text, that replaces ``removed`` in the log."""
    return dumps({"digest": state_digest(removed.state), "marker": marker, "topic": removed.topic})


def state_digest(state: bytes) -> str:
    """The SHA-256 of one event's stored state, in hex."""
    return hashlib.sha256(state).hexdigest()


def removal_digest(stubs: Iterable[tuple[int, str, str]]) -> str:
    """The digest of a purge: SHA-256 over one line ``version topic state-digest`` per
    removed event, in version order, in hex."""
    lines = "".join(f"{version} {topic} {digest}\n" for version, topic, digest in stubs)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def plan(
    kind: str, resource_id: str, key: str, removed: list[Removed], before: int | None
) -> Purge:
    """The :class:`Purge` that removing ``removed`` (in version order) makes."""
    lines = [(item.version, item.topic, state_digest(item.state)) for item in removed]
    return Purge(kind, resource_id, key, len(removed), removal_digest(lines), before)


def marker_state(purge: Purge) -> dict[str, Any]:
    """The state of a purge's marker event."""
    return {
        "before": purge.before,
        "digest": purge.digest,
        "events": purge.events,
        "key": purge.key,
        "kind": purge.kind,
        "resource": purge.resource,
    }


def marker_of(state: Mapping[str, Any]) -> Purge:
    """The :class:`Purge` a marker event's state describes."""
    return Purge(
        str(state["kind"]),
        str(state["resource"]),
        str(state["key"]),
        int(state["events"]),
        str(state["digest"]),
        None if state.get("before") is None else int(state["before"]),
    )
