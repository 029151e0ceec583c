"""``RecordedLog``: a store's logs as an export, held in memory (from a store, a file or events)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from nenjim.admin.transfer import JOURNAL, STORAGE, export_store
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.log.transfer import (
    ExportReader,
    ExportSummary,
    ExportWriter,
    LoggedEvent,
    LogSection,
)
from nenjim.infrastructure.storage import BlobEntry, purge
from nenjim.infrastructure.storage.sql import events as storage_events
from nenjim.infrastructure.storage.sql.dialect import dumps
from nenjim.journal.impl.ref.log import JournalLog

_LOG_STREAMS = {
    storage_events.RECORD_INSERTED: ("records", "key"),
    storage_events.RECORD_REPLACED: ("records", "key"),
    storage_events.RECORD_DELETED: ("records", "key"),
    storage_events.STREAM_ENTRY_APPENDED: ("streams", "stream"),
    storage_events.STREAM_DELETED: ("streams", "stream"),
    storage_events.BLOB_PUT: ("blobs", "key"),
}
_ORIGINATORS: dict[str, Callable[[str, str], UUID]] = {
    "records": storage_events.record_stream,
    "streams": storage_events.entry_stream,
    "blobs": storage_events.blob_stream,
}

StorageKey = tuple[str, str, str]
"""``(kind, resource id, key)``: one record key, stream or blob of the storage log."""


@dataclass(frozen=True, slots=True)
class RecordedLog:
    """An intact log export (see ``docs/log.md``), checked when it is made.

    ``data`` is the file's bytes; ``name`` names it in messages.
    """

    data: bytes
    name: str
    summary: ExportSummary
    events: tuple[LoggedEvent, ...]

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "recorded log") -> RecordedLog:
        """A recorded log from an export's bytes; ``ExportFormatError`` if damaged."""
        reader = ExportReader(io.BytesIO(data), name)
        events = tuple(item for item in reader if isinstance(item, LoggedEvent))
        assert reader.summary is not None
        return cls(data, name, reader.summary, events)

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedLog:
        """A recorded log kept as a file (``nenjim log export --out FILE``)."""
        return cls.from_bytes(Path(path).read_bytes(), str(path))

    @classmethod
    def record(
        cls, store: str, *, journal: str | None = None, source: str | None = None
    ) -> RecordedLog:
        """Export the store at ``store`` now (a durable store: ``sqlite:`` or ``postgresql://``)."""
        out = io.BytesIO()
        export_store(store, out, journal=journal, source=source)
        return cls.from_bytes(out.getvalue(), f"the log of {source or store}")

    @classmethod
    def of_journal_log(cls, log: JournalLog, *, name: str = "a Journal log") -> RecordedLog:
        """The events of an open Journal log, as stored (any store kind, ``memory:`` too)."""
        events = [
            LoggedEvent(
                JOURNAL,
                notification.id,
                UUID(str(notification.originator_id)),
                notification.originator_version,
                notification.topic,
                notification.state,
            )
            for notification in LogReader(log).notifications(0)
        ]
        return cls._written(name, [(LogSection(JOURNAL, log.recorded_identity()), events)])

    @classmethod
    def of_storage_events(
        cls, events: Sequence[tuple[str, Mapping[str, Any]]], *, name: str = "given events"
    ) -> RecordedLog:
        """A storage log made of ``(topic, state)`` events, in order.

        Each event goes to the log stream its state names (resource and key
        or stream) at that stream's next version, with the state stored as
        the storage driver writes it (compact JSON; a blob put's ``data``, given as
        bytes or as base64 text, stored after its JSON header). A purge's stub names its
        key as the ``memory:`` log's do (``kind``, ``resource``, ``key``); its
        marker goes to the key's purge log stream.
        """
        versions: dict[str, int] = {}
        logged = []
        for number, (topic, state) in enumerate(events, start=1):
            originator = _originator(topic, state)
            version = versions[str(originator)] = versions.get(str(originator), 0) + 1
            body = _stored(topic, state)
            logged.append(LoggedEvent(STORAGE, number, originator, version, topic, body))
        return cls._written(name, [(LogSection(STORAGE, None), logged)])

    @classmethod
    def _written(
        cls, name: str, logs: Sequence[tuple[LogSection, Sequence[LoggedEvent]]]
    ) -> RecordedLog:
        out = io.BytesIO()
        writer = ExportWriter(out, name)
        for section, events in logs:
            writer.begin_log(section)
            for event in events:
                writer.event(event)
        writer.finish()
        return cls.from_bytes(out.getvalue(), name)

    @property
    def logs(self) -> tuple[str, ...]:
        """The names of the logs it holds."""
        return tuple(section.log for section in self.summary.logs)

    @property
    def identity(self) -> str | None:
        """The recorded owner of its Journal log, if any."""
        for section in self.summary.logs:
            if section.log == JOURNAL:
                return section.identity
        return None

    def events_of(self, log: str) -> tuple[LoggedEvent, ...]:
        """The events of one log, in order."""
        return tuple(event for event in self.events if event.log == log)

    def storage_keys(self) -> tuple[StorageKey, ...]:
        """Every record key, stream and blob the storage log ever wrote (a purged one too: its
        purge's marker names it), in first-write order (a purged key's: its first marker's)."""
        seen: dict[StorageKey, None] = {}
        for event in self.events_of(STORAGE):
            if event.topic == purge.PURGE:
                marker = purge.marker_of(json.loads(event.state))
                seen.setdefault((marker.kind, marker.resource, marker.key), None)
                continue
            kind, key_field = _LOG_STREAMS.get(event.topic, ("", ""))
            if not kind:
                continue
            state = storage_events.decode_event(event.topic, event.state)
            seen.setdefault((kind, str(state["resource"]), str(state[key_field])), None)
        return tuple(seen)

    def write(self, path: str | Path) -> None:
        """Keep the recorded log as a file."""
        Path(path).write_bytes(self.data)


def _stored(topic: str, state: Mapping[str, Any]) -> bytes:
    """A given event's state as the storage driver stores it: compact JSON, but a blob
    put's header and bytes (its ``data`` the bytes, or their base64 text)."""
    if topic != storage_events.BLOB_PUT:
        return dumps(dict(state)).encode("utf-8")
    data = state["data"]
    if isinstance(data, str):
        data = base64.b64decode(data, validate=True)
    blob = BlobEntry(state["key"], data, state["attributes"])
    return storage_events.blob_state(state["resource"], blob)


def _originator(topic: str, state: Mapping[str, Any]) -> UUID:
    """The log stream a storage event's state belongs to."""
    if topic == purge.PURGE:
        return UUID(str(purge.purge_stream(state["kind"], state["resource"], state["key"])))
    if topic == purge.PURGED:
        return _ORIGINATORS[state["kind"]](state["resource"], state["key"])
    kind, key_field = _LOG_STREAMS[topic]
    return _ORIGINATORS[kind](state["resource"], state[key_field])
