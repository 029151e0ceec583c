"""Replaying a recorded log into memory: the Journal's events as stored, storage through the SPI.

The in-memory storage backend keeps no log, so its state is rebuilt by
running each storage event as the Storage SPI operation that wrote it
(insert, replace, delete, append, stream delete, blob put), in log order:
the same rules check every step, and the records, their histories, the
streams and the blobs end up as the log says. The times a history records
are the replay's own.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from nenjim.infrastructure.log.transfer import LoggedEvent
from nenjim.infrastructure.storage import AppendEntry, Backend, DurableRecord
from nenjim.infrastructure.storage.sql import events as storage_events


def apply_storage_events(backend: Backend, events: Iterable[LoggedEvent]) -> None:
    """Run each storage event, in order, as the SPI operation that wrote it."""
    view = backend.view
    for event in events:
        state = storage_events.decode(event.state)
        resource, topic = state["resource"], event.topic
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
                data=base64.b64decode(state["data"], validate=True),
                attributes=state["attributes"],
            )
        else:
            raise ValueError(f"storage event {event.id}: unknown topic {topic!r}")


def _record(state: dict[str, Any]) -> DurableRecord:
    return DurableRecord(state["record_type"], state["format_version"], state["payload"])
