"""The log export format: what is written reads back exactly, and every damage is refused.

Every refusal names the file and the line. Beyond the listed cases, two
properties hold for any export: cut at any byte, it is refused; change any
one byte, it is refused (the checksum covers every byte before the trailer,
and the trailer must be exactly what the lines add up to).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nenjim.infrastructure.log.transfer import (
    ExportFormatError,
    ExportReader,
    ExportWriter,
    LoggedEvent,
    LogSection,
)

A, B = uuid.uuid5(uuid.NAMESPACE_URL, "a"), uuid.uuid5(uuid.NAMESPACE_URL, "b")
JOURNAL = LogSection("journal", "name:fixture")
STORAGE = LogSection("storage", None)
EVENTS = [
    LoggedEvent("journal", 1, A, 1, "t:Genesis", b'{"text":"\\u00e9"}'),
    LoggedEvent("journal", 2, A, 2, "t:Successor", bytes(range(256))),
    LoggedEvent("storage", 3, B, 1, "t:Inserted", b"{}"),
    LoggedEvent("storage", 7, B, 2, "t:Deleted", b""),
]


def _export(events: list[LoggedEvent] = EVENTS) -> bytes:
    out = io.BytesIO()
    writer = ExportWriter(out, "sqlite:state.db")
    for section in (JOURNAL, STORAGE):
        writer.begin_log(section)
        for event in events:
            if event.log == section.log:
                writer.event(event)
    writer.finish()
    return out.getvalue()


def _read(data: bytes) -> list[LogSection | LoggedEvent]:
    return list(ExportReader(io.BytesIO(data), "moved.log"))


def _refusal(data: bytes) -> str:
    with pytest.raises(ExportFormatError) as caught:
        _read(data)
    return str(caught.value)


def _lines(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.splitlines()]


def _rewrite(lines: list[dict[str, object]]) -> bytes:
    """Lines written back, with a trailer recomputed as an honest writer would."""
    body = b"".join((json.dumps(line, separators=(",", ":")) + "\n").encode() for line in lines)
    counts: dict[str, int] = {}
    for line in lines:
        if line["kind"] == "log":
            counts[str(line["log"])] = 0
        if line["kind"] == "event":
            counts[str(line["log"])] = counts.get(str(line["log"]), 0) + 1
    end = {
        "kind": "end",
        "events": counts,
        "lines": len(lines),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return body + (json.dumps(end, separators=(",", ":")) + "\n").encode()


def test_an_export_reads_back_exactly() -> None:
    data = _export()
    reader = ExportReader(io.BytesIO(data), "moved.log")
    assert list(reader) == [JOURNAL, *EVENTS[:2], STORAGE, *EVENTS[2:]]
    assert reader.source == "sqlite:state.db"
    assert reader.summary is not None
    assert dict(reader.summary.events) == {"journal": 2, "storage": 2}
    assert reader.summary.lines == 7
    assert reader.summary.total == 4


def test_the_documented_layout() -> None:
    lines = _lines(_export())
    assert lines[0] == {
        "kind": "header",
        "format": "nenjim-log-export",
        "version": 1,
        "source": "sqlite:state.db",
    }
    assert lines[1] == {"kind": "log", "log": "journal", "identity": "name:fixture"}
    assert lines[2] == {
        "kind": "event",
        "log": "journal",
        "id": 1,
        "originator_id": str(A),
        "originator_version": 1,
        "topic": "t:Genesis",
        "state": base64.b64encode(b'{"text":"\\u00e9"}').decode(),
    }
    assert lines[-1]["kind"] == "end"
    assert lines[-1]["events"] == {"journal": 2, "storage": 2}
    assert lines[-1]["lines"] == 7
    assert _export().isascii()


def test_an_empty_file_is_not_an_export() -> None:
    assert _refusal(b"") == "moved.log: empty: not a nenjim log export"


@pytest.mark.parametrize(
    "first",
    [b"hello\n", b"[1]\n", b'{"kind":"header","format":"other","version":1,"source":""}\n'],
)
def test_another_file_is_not_an_export(first: bytes) -> None:
    assert _refusal(first) == "moved.log line 1: not a nenjim log export"


def test_another_format_version_is_refused() -> None:
    lines = _lines(_export())
    lines[0]["version"] = 2
    assert _refusal(_rewrite(lines[:-1])) == (
        "moved.log line 1: log export format version 2; this build reads version 1 only"
    )


def test_a_file_without_its_trailer_is_truncated() -> None:
    data = _export()
    cut = data[: data.rindex(b'{"kind":"end"')]
    assert _refusal(cut) == "moved.log: ends after line 7 without its trailer: truncated"


def test_a_last_line_without_its_end_is_truncated() -> None:
    data = _export()
    assert _refusal(data[:-1]) == "moved.log line 8: truncated (the line has no end)"
    assert _refusal(data[:200]).startswith("moved.log line 3: truncated")


def test_an_edited_line_fails_the_checksum() -> None:
    data = _export().replace(b'"originator_version":2', b'"originator_version":3')
    assert "line 8: checksum mismatch" in _refusal(data)
    assert "the file was changed after export" in _refusal(data)


def test_an_edited_checksum_is_refused() -> None:
    lines = _export().splitlines(keepends=True)
    end = json.loads(lines[-1])
    end["sha256"] = "0" * 64
    edited = b"".join(lines[:-1]) + (json.dumps(end) + "\n").encode()
    assert "line 8: checksum mismatch" in _refusal(edited)


def test_a_line_after_the_trailer_is_refused() -> None:
    assert _refusal(_export() + b"\n") == "moved.log line 9: a line after the trailer"


def test_counts_that_do_not_add_up_are_refused() -> None:
    data = _export()
    lines = data.splitlines(keepends=True)
    end = json.loads(lines[-1])
    end["lines"] = 6
    assert "the trailer counts 6 lines, the file has 7" in _refusal(
        b"".join(lines[:-1]) + (json.dumps(end) + "\n").encode()
    )
    end["lines"], end["events"] = 7, {"journal": 2}
    assert "the trailer counts events" in _refusal(
        b"".join(lines[:-1]) + (json.dumps(end) + "\n").encode()
    )


def test_ids_that_do_not_increase_are_refused_even_with_an_honest_checksum() -> None:
    lines = _lines(_export())[:-1]
    lines[2], lines[3] = lines[3], lines[2]
    assert _refusal(_rewrite(lines)) == (
        "moved.log line 4: journal event id 1 after id 2: ids must increase"
    )
    lines = _lines(_export())[:-1]
    lines[6]["id"] = 3
    assert "line 7: storage event id 3 after id 3" in _refusal(_rewrite(lines))


@pytest.mark.parametrize(
    ("line", "edit", "problem"),
    [
        (2, {"extra": 1}, "event line: unknown extra"),
        (2, {"topic": None}, "topic is not a non-empty string"),
        (2, {"state": "***"}, "state is not base64 text"),
        (2, {"originator_id": "not-a-uuid"}, "originator_id 'not-a-uuid' is not a lower-case UUID"),
        (2, {"originator_id": str(A).upper()}, "is not a lower-case UUID"),
        (2, {"id": 0}, "id 0 is not an integer from 1 to 2^63-1"),
        (2, {"id": True}, "id True is not an integer"),
        (2, {"originator_version": "1"}, "originator_version '1' is not an integer"),
        (2, {"log": "storage"}, "an event of log 'storage' outside its log's section"),
        (1, {"log": "Bad Name"}, "invalid log name 'Bad Name'"),
        (4, {"log": "journal"}, "log 'journal' appears twice"),
        (1, {"identity": 7}, "identity is neither a string nor null"),
        (3, {"kind": "comment"}, "unknown line kind 'comment'"),
    ],
)
def test_each_malformed_line_is_refused_by_line(
    line: int, edit: dict[str, object], problem: str
) -> None:
    lines = _lines(_export())[:-1]
    lines[line].update(edit)
    assert f"moved.log line {line + 1}: " in _refusal(_rewrite(lines))
    assert problem in _refusal(_rewrite(lines))


def test_the_writer_refuses_what_the_reader_would() -> None:
    writer = ExportWriter(io.BytesIO(), "x")
    writer.begin_log(JOURNAL)
    writer.event(EVENTS[1])
    with pytest.raises(ValueError, match="out of order"):
        writer.event(EVENTS[0])
    with pytest.raises(ValueError, match="out of order"):
        writer.event(EVENTS[2])  # a storage event in the journal's section
    with pytest.raises(ValueError, match="not a new log name"):
        writer.begin_log(JOURNAL)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_truncation_is_refused(data: st.DataObject) -> None:
    export = _export()
    cut = data.draw(st.integers(min_value=0, max_value=len(export) - 1))
    with pytest.raises(ExportFormatError):
        _read(export[:cut])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_one_byte_edit_is_refused(data: st.DataObject) -> None:
    export = bytearray(_export())
    index = data.draw(st.integers(min_value=0, max_value=len(export) - 1))
    value = data.draw(st.integers(min_value=0, max_value=255).filter(lambda b: b != export[index]))
    export[index] = value
    with pytest.raises(ExportFormatError):
        _read(bytes(export))
