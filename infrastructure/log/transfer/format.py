"""The log export format: JSON Lines, one event a line, closed by a checksummed trailer.

A file is UTF-8 text (ASCII in practice: JSON escapes everything else), one
JSON object per line, each line ending with LF. In order:

1. the header, ``{"kind": "header", "format": "nenjim-log-export", "version": 1,
   "source": URL}`` (``source`` names the store it came from, a password
   never shown; it is informative only);
2. for each log the store holds, a log line ``{"kind": "log", "log": NAME,
   "identity": OWNER | null}``, then one event line per event of that log,
   ``{"kind": "event", "log": NAME, "id": N, "originator_id": UUID,
   "originator_version": V, "topic": TOPIC, "state": BASE64}``, in
   increasing notification id ``N``; ``state`` is the stored bytes,
   base64-encoded, so they travel exactly;
3. the trailer, ``{"kind": "end", "events": {NAME: COUNT, ...}, "lines": L,
   "sha256": HEX}``: the events of each log, the number of lines before the
   trailer, and the SHA-256 of every byte before the trailer.

Reading checks everything and names the line of the first problem: a
truncated file (no trailer, or a last line without its LF), an edited line
(the checksum), a line after the trailer, another format or version, an
unknown key, a value of the wrong type, an event of another log than the
section it sits in, and ids that do not increase. Since the checksum is
known only at the end, a consumer must not commit anything before the
reader is exhausted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import IO, Any
from uuid import UUID

FORMAT = "nenjim-log-export"
FORMAT_VERSION = 1

_LOG_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_HEADER_KEYS = {"kind", "format", "version", "source"}
_LOG_KEYS = {"kind", "log", "identity"}
_EVENT_KEYS = {"kind", "log", "id", "originator_id", "originator_version", "topic", "state"}
_END_KEYS = {"kind", "events", "lines", "sha256"}
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class LogSection:
    """One log of the exported store: its name and its owner's identity (if recorded)."""

    log: str
    identity: str | None


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One stored event, exactly as its log holds it."""

    log: str
    id: int
    """The notification id: the event's position in its log."""
    originator_id: UUID
    originator_version: int
    topic: str
    state: bytes


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export file holds, as its trailer (checked) says."""

    source: str
    logs: tuple[LogSection, ...]
    events: Mapping[str, int]
    lines: int
    sha256: str

    @property
    def total(self) -> int:
        """Events of every log."""
        return sum(self.events.values())


class ExportFormatError(ValueError):
    """A file that is not an intact log export: one line naming the file and the line."""

    def __init__(self, name: str, line: int | None, reason: str) -> None:
        where = name if line is None else f"{name} line {line}"
        super().__init__(f"{where}: {reason}")
        self.name = name
        self.line = line
        self.reason = reason


class ExportWriter:
    """Writes one export to a binary stream; :meth:`finish` writes the trailer."""

    def __init__(self, stream: IO[bytes], source: str) -> None:
        self._stream = stream
        self._digest = hashlib.sha256()
        self._lines = 0
        self._counts: dict[str, int] = {}
        self._sections: list[LogSection] = []
        self._current: str | None = None
        self._last_id = 0
        self._source = source
        self._write(
            {"kind": "header", "format": FORMAT, "version": FORMAT_VERSION, "source": source}
        )

    def begin_log(self, section: LogSection) -> None:
        """Start the events of one log (each log once)."""
        if not _LOG_NAME.fullmatch(section.log) or section.log in self._counts:
            raise ValueError(f"log name {section.log!r} is not a new log name")
        self._write({"kind": "log", "log": section.log, "identity": section.identity})
        self._sections.append(section)
        self._counts[section.log] = 0
        self._current, self._last_id = section.log, 0

    def event(self, event: LoggedEvent) -> None:
        """One event of the current log, after every event of a lower id."""
        if event.log != self._current or event.id <= self._last_id:
            raise ValueError(f"event {event.log} {event.id} is out of order")
        self._write(
            {
                "kind": "event",
                "log": event.log,
                "id": event.id,
                "originator_id": str(event.originator_id),
                "originator_version": event.originator_version,
                "topic": event.topic,
                "state": base64.b64encode(event.state).decode("ascii"),
            }
        )
        self._counts[event.log] += 1
        self._last_id = event.id

    def finish(self) -> ExportSummary:
        """Write the trailer; what the file holds."""
        summary = ExportSummary(
            self._source,
            tuple(self._sections),
            MappingProxyType(dict(self._counts)),
            self._lines,
            self._digest.hexdigest(),
        )
        line = {
            "kind": "end",
            "events": dict(summary.events),
            "lines": summary.lines,
            "sha256": summary.sha256,
        }
        self._stream.write(_encode(line))
        return summary

    def _write(self, document: dict[str, Any]) -> None:
        data = _encode(document)
        self._digest.update(data)
        self._stream.write(data)
        self._lines += 1


def _encode(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, separators=(",", ":")) + "\n").encode("ascii")


class ExportReader:
    """Reads and checks one export from a binary stream, named ``name`` in errors.

    Iterating yields a :class:`LogSection` before the events of each log,
    then its :class:`LoggedEvent` objects; it raises
    :class:`ExportFormatError` at the first problem, the checksum's at the
    end. :attr:`summary` is set once the whole file was read and found intact.
    """

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self._stream = stream
        self.name = name
        self.source = ""
        self.summary: ExportSummary | None = None

    def __iter__(self) -> Iterator[LogSection | LoggedEvent]:
        digest = hashlib.sha256()
        counts: dict[str, int] = {}
        sections: list[LogSection] = []
        current: str | None = None
        last_id = 0
        number = 0
        while True:
            raw = self._stream.readline()
            number += 1
            if not raw:
                if number == 1:
                    raise self._error(None, "empty: not a nenjim log export")
                raise self._error(
                    None, f"ends after line {number - 1} without its trailer: truncated"
                )
            if not raw.endswith(b"\n"):
                raise self._error(number, "truncated (the line has no end)")
            document = self._document(raw, number)
            kind = document.get("kind")
            if kind == "end" and number > 1:
                self._end(document, number, counts, digest.hexdigest())
                if self._stream.read(1):
                    raise self._error(number + 1, "a line after the trailer")
                self.summary = ExportSummary(
                    self.source,
                    tuple(sections),
                    MappingProxyType(counts),
                    number - 1,
                    digest.hexdigest(),
                )
                return
            digest.update(raw)
            if number == 1:
                self._header(document, number)
            elif kind == "log":
                section = self._section(document, number, counts)
                sections.append(section)
                counts[section.log] = 0
                current, last_id = section.log, 0
                yield section
            elif kind == "event":
                event = self._event(document, number, current, last_id)
                counts[event.log] += 1
                last_id = event.id
                yield event
            else:
                raise self._error(number, f"unknown line kind {kind!r}")

    def _document(self, raw: bytes, number: int) -> dict[str, Any]:
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            document = None
        if not isinstance(document, dict):
            reason = "not a nenjim log export" if number == 1 else "not a JSON object"
            raise self._error(number, reason)
        return document

    def _header(self, document: dict[str, Any], number: int) -> None:
        if document.get("kind") != "header" or document.get("format") != FORMAT:
            raise self._error(number, "not a nenjim log export")
        version = document.get("version")
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise self._error(
                number,
                f"log export format version {version!r}; this build reads version "
                f"{FORMAT_VERSION} only",
            )
        self._keys(document, _HEADER_KEYS, number)
        source = document["source"]
        if not isinstance(source, str):
            raise self._error(number, "source is not a string")
        self.source = source

    def _section(
        self, document: dict[str, Any], number: int, counts: Mapping[str, int]
    ) -> LogSection:
        self._keys(document, _LOG_KEYS, number)
        log, identity = document["log"], document["identity"]
        if not isinstance(log, str) or not _LOG_NAME.fullmatch(log):
            raise self._error(number, f"invalid log name {log!r}")
        if log in counts:
            raise self._error(number, f"log {log!r} appears twice")
        if identity is not None and not isinstance(identity, str):
            raise self._error(number, "identity is neither a string nor null")
        return LogSection(log, identity)

    def _event(
        self, document: dict[str, Any], number: int, current: str | None, last_id: int
    ) -> LoggedEvent:
        self._keys(document, _EVENT_KEYS, number)
        log = document["log"]
        if current is None or log != current:
            raise self._error(number, f"an event of log {log!r} outside its log's section")
        notification_id = self._count(document, "id", number)
        if notification_id <= last_id:
            raise self._error(
                number,
                f"{log} event id {notification_id} after id {last_id}: ids must increase",
            )
        version = self._count(document, "originator_version", number)
        originator, topic, state = document["originator_id"], document["topic"], document["state"]
        try:
            originator_id = UUID(originator) if isinstance(originator, str) else None
        except ValueError:
            originator_id = None
        if originator_id is None or str(originator_id) != originator:
            raise self._error(number, f"originator_id {originator!r} is not a lower-case UUID")
        if not isinstance(topic, str) or not topic:
            raise self._error(number, "topic is not a non-empty string")
        try:
            if not isinstance(state, str):
                raise TypeError
            data = base64.b64decode(state, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise self._error(number, "state is not base64 text") from None
        return LoggedEvent(log, notification_id, originator_id, version, topic, data)

    def _end(
        self, document: dict[str, Any], number: int, counts: Mapping[str, int], sha256: str
    ) -> None:
        self._keys(document, _END_KEYS, number)
        said, lines, checksum = document["events"], document["lines"], document["sha256"]
        if not isinstance(checksum, str) or not _SHA256.fullmatch(checksum):
            raise self._error(number, "sha256 is not 64 lower-case hex digits")
        if checksum != sha256:
            raise self._error(
                number,
                f"checksum mismatch: lines 1-{number - 1} have sha256 {sha256}, the trailer "
                f"says {checksum} (the file was changed after export)",
            )
        if lines != number - 1 or isinstance(lines, bool):
            raise self._error(
                number, f"the trailer counts {lines!r} lines, the file has {number - 1}"
            )
        if said != dict(counts):
            raise self._error(
                number,
                f"the trailer counts events {json.dumps(said)}, the file has "
                f"{json.dumps(dict(counts))}",
            )

    def _error(self, line: int | None, reason: str) -> ExportFormatError:
        return ExportFormatError(self.name, line, reason)

    def _keys(self, document: dict[str, Any], expected: set[str], number: int) -> None:
        if document.keys() != expected:
            missing = sorted(expected - document.keys())
            extra = sorted(document.keys() - expected)
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(extra)}" if extra else "",
                )
                if part
            )
            raise self._error(number, f"{document['kind']} line: {detail}")

    def _count(self, document: dict[str, Any], key: str, number: int) -> int:
        value = document[key]
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value < 2**63:
            raise self._error(number, f"{key} {value!r} is not an integer from 1 to 2^63-1")
        return value
