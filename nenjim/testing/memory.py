"""Replaying a recorded log into memory: the Journal's events as stored, storage through the SPI.

The in-memory storage backend keeps no log, so its state is rebuilt by
running each storage event as the Storage SPI operation that wrote it
(insert, replace, delete, append, stream delete, blob put), in log order:
the same rules check every step, and the records, their histories, the
streams and the blobs end up as the log says. The times a history records
are the replay's own.

A purge left stubs in place of what it removed and a marker after them. A
stub of a record write is skipped (and so is the delete that follows it: the
row was never written), a stub of a blob put too; a stub of a stream entry
appends a placeholder, so later positions stay where the log has them. The
marker then purges the key through the SPI, which removes the placeholders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

from nenjim.infrastructure.log.transfer import LoggedEvent
from nenjim.infrastructure.storage import AppendEntry, Backend, DurableRecord, View, purge
from nenjim.infrastructure.storage.sql import events as storage_events

_LOG_STREAMS: dict[str, Callable[[str, str], UUID]] = {
    "records": storage_events.record_stream,
    "streams": storage_events.entry_stream,
    "blobs": storage_events.blob_stream,
}
_PLACEHOLDER = DurableRecord("nenjim.storage.purged", "0.1", {})
"""What stands for a purged stream entry until its purge's marker removes it."""


def apply_storage_events(backend: Backend, events: Iterable[LoggedEvent]) -> None:
    """Run each storage event, in order, as the SPI operation that wrote it."""
    view = backend.view
    logged = list(events)
    purged = _purged_keys(logged)
    pending: set[str] = set()  # log streams whose last record write was purged
    for event in logged:
        state = storage_events.decode_event(event.topic, event.state)
        topic = event.topic
        if topic == purge.PURGED:
            _stub(view, event, state, purged, pending)
            continue
        if topic == purge.PURGE:
            _marker(view, purge.marker_of(state))
            continue
        resource = state["resource"]
        if topic == storage_events.RECORD_DELETED and str(event.originator_id) in pending:
            pending.discard(str(event.originator_id))
            continue
        if topic in (storage_events.RECORD_INSERTED, storage_events.RECORD_REPLACED):
            record = _record(state)
            if topic == storage_events.RECORD_INSERTED:
                view.records(resource).insert(
                    key=state["key"],
                    revision=state["revision"],
                    attributes=state["attributes"],
                    record=record,
                )
            else:
                view.records(resource).replace(
                    key=state["key"],
                    expected_revision=state["revision"] - 1,
                    next_revision=state["revision"],
                    attributes=state["attributes"],
                    record=record,
                )
        elif topic == storage_events.RECORD_DELETED:
            view.records(resource).delete(key=state["key"], expected_revision=state["revision"])
        elif topic == storage_events.STREAM_ENTRY_APPENDED:
            view.streams(resource).append(
                stream=state["stream"],
                expected_head=state["position"] - 1,
                entries=[AppendEntry(state["id"], _record(state))],
            )
        elif topic == storage_events.STREAM_DELETED:
            view.streams(resource).delete(stream=state["stream"])
        elif topic == storage_events.BLOB_PUT:
            view.blobs(resource).put_if_absent(
                key=state["key"],
                data=state["data"],
                attributes=state["attributes"],
            )
        else:
            raise ValueError(f"storage event {event.id}: unknown topic {topic!r}")


def _purged_keys(events: Iterable[LoggedEvent]) -> dict[str, tuple[str, str, str]]:
    """The key of each log stream a marker names: log stream -> ``(kind, resource, key)``."""
    keys = {}
    for event in events:
        if event.topic == purge.PURGE:
            marker = purge.marker_of(storage_events.decode(event.state))
            log_stream = _LOG_STREAMS[marker.kind](marker.resource, marker.key)
            keys[str(log_stream)] = (marker.kind, marker.resource, marker.key)
    return keys


def _stub(
    view: View,
    event: LoggedEvent,
    state: dict[str, Any],
    purged: dict[str, tuple[str, str, str]],
    pending: set[str],
) -> None:
    log_stream = str(event.originator_id)
    if "kind" in state:  # a stub of the memory log names its key
        kind, resource, key = str(state["kind"]), str(state["resource"]), str(state["key"])
    elif log_stream in purged:
        kind, resource, key = purged[log_stream]
    else:
        raise ValueError(f"storage event {event.id}: a purge stub of no purge marker")
    if kind == "records":
        pending.add(log_stream)
    elif kind == "streams":
        streams = view.streams(resource)
        placeholder = AppendEntry(f"purged-{event.originator_version}", _PLACEHOLDER)
        streams.append(stream=key, expected_head=streams.head(stream=key), entries=[placeholder])


def _marker(view: View, marker: purge.Purge) -> None:
    if marker.kind == "records":
        view.records(marker.resource).purge(key=marker.key)
    elif marker.kind == "streams":
        view.streams(marker.resource).purge(stream=marker.key, before=marker.before)
    else:
        view.blobs(marker.resource).purge(key=marker.key)


def _record(state: dict[str, Any]) -> DurableRecord:
    return DurableRecord(state["record_type"], state["format_version"], state["payload"])
