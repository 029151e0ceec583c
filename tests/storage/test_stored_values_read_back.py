"""Every value a write accepts reads back equal, on every backend, through every path that
reads stored state.

Payloads are drawn from the whole JSON value space (``json_values``: floats at every
boundary of their canonical form, subnormals, the largest float, integers at ±(2^53-1),
unicode text and keys, tuples, nesting up to the limit, wide arrays and objects) and
written through the Storage SPI as records and stream entries. Each must read back equal
at once (the write's answer, ``read``, ``history``, the stream's ``read``), and at the end
through the log the followers read, after reopening the store, in a clean audit, after the
repair rewrote the rows from the log, in a store that imported an export of the log, and
in memory after the replay kit ran that export write by write.
Attributes at the edges of their types (signed 64-bit integers, unicode text) go through
the same paths.

The default run is bounded and derandomized; ``NENJIM_FUZZ=long`` draws many more.
"""

from __future__ import annotations

import decimal
import io
import itertools
import math
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from json_values import PAYLOADS, nested, same

from nenjim.admin.transfer import export_store, import_store
from nenjim.infrastructure.log.transfer import ExportReader, LoggedEvent
from nenjim.infrastructure.memory.storage import InMemoryBackend, InMemoryDriver
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.storage import AppendEntry, Backend, DurableRecord, SerializationError
from nenjim.infrastructure.storage.audit import audit_backend, audit_store, repair_backend
from nenjim.infrastructure.storage.canonical_json import MAX_DEPTH
from nenjim.infrastructure.storage.follow.log import START, log_size, read_after
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.scalars import MAX_INTEGER, MIN_INTEGER
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.testing.memory import apply_storage_events

LONG = os.environ.get("NENJIM_FUZZ") == "long"

VALUE_SETTINGS = settings(
    max_examples=500 if LONG else 30,
    deadline=None,
    derandomize=not LONG,
    database=settings.default.database if LONG else None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
    print_blob=True,
)

WORKFLOWS = "workflow.states"
JOURNAL = "agent.journal"
CONTENTS = "content.blobs"
HANDOFFS = "handoff.states"
OWNER = "owner"
RECORD_TYPE = "test.value"
FINAL_TIMEOUT = 30.0
"""Seconds to wait for committed events to become final for followers (PostgreSQL)."""

EDGE_INTEGERS = (MIN_INTEGER, MIN_INTEGER + 1, -(2**53), 0, 2**53, 2**53 + 1, MAX_INTEGER)
EDGE_NAMES = ("\U0001f600", "e\u0301", "\u00e9", "\uffff", "\x01", '"\\', "x" * 300)


class Written:
    """What the test wrote: each record's payload by key, the stream's in order, attributes."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.entries: list[tuple[str, dict[str, Any]]] = []
        self.blobs: dict[str, int] = {}
        self.handoffs: dict[str, str] = {}

    def check(self, backend: Backend) -> None:
        """Every record, its history, the stream and every attribute read back equal."""
        view = backend.view
        records = view.records(WORKFLOWS)
        for key, payload in self.records.items():
            entry = records.fetch(key)
            same(entry.record.payload, payload)
            assert entry.record == DurableRecord(RECORD_TYPE, "0.1", payload)
            (recorded,) = records.history(key)
            same(recorded.record.payload, payload)
        stored = view.streams(JOURNAL).read(stream=OWNER)
        assert [entry.id for entry in stored] == [key for key, _ in self.entries]
        for entry, (_, payload) in zip(stored, self.entries, strict=True):
            same(entry.record.payload, payload)
        for key, number in self.blobs.items():
            attributes = view.blobs(CONTENTS).fetch(key).attributes
            assert type(attributes["canonicalization_version"]) is int
            assert attributes["canonicalization_version"] == number
        for key, name in self.handoffs.items():
            assert view.records(HANDOFFS).fetch(key).attributes == {"active_agent_id": name}

    def check_log(self, states: list[dict[str, Any]]) -> None:
        """The log the followers read holds every payload and attribute as written."""
        payloads = {
            (state["resource"], state.get("key", state.get("id"))): state
            for state in states
            if "resource" in state
        }
        for key, payload in self.records.items():
            same(payloads[(WORKFLOWS, key)]["payload"], payload)
        for key, payload in self.entries:
            same(payloads[(JOURNAL, key)]["payload"], payload)
        for key, number in self.blobs.items():
            assert payloads[(CONTENTS, key)]["attributes"] == {"canonicalization_version": number}
        for key, name in self.handoffs.items():
            assert payloads[(HANDOFFS, key)]["attributes"] == {"active_agent_id": name}


def _write_everything(backend: Backend) -> Written:
    """Write drawn payloads as records and stream entries, each read back equal at once,
    and attributes at the edges of their types."""
    written = Written()
    view = backend.view
    view.records("agent.roots").insert(
        key=OWNER, revision=0, attributes={}, record=DurableRecord(RECORD_TYPE, "0.1", {})
    )
    records = view.records(WORKFLOWS)
    journal = view.streams(JOURNAL)
    # Each call its own key, so a failing example replayed meets no earlier write.
    numbers = itertools.count()

    @VALUE_SETTINGS
    @given(payload=PAYLOADS)
    def write(payload: dict[str, Any]) -> None:
        key = f"value-{next(numbers)}"
        record = DurableRecord(RECORD_TYPE, "0.1", payload)
        same(record.payload, payload)
        answered = records.insert(key=key, revision=1, attributes={}, record=record)
        assert answered.record == record
        read = records.read(key)
        assert read is not None
        assert read.record == record
        same(read.record.payload, payload)
        (recorded,) = records.history(key)
        same(recorded.record.payload, payload)
        head = journal.head(stream=OWNER)
        (appended,) = journal.append(
            stream=OWNER, expected_head=head, entries=[AppendEntry(key, record)]
        )
        assert appended.record == record
        (entry,) = journal.read(stream=OWNER, after=head)
        same(entry.record.payload, payload)
        written.records[key] = payload
        written.entries.append((key, payload))

    write()
    for index, number in enumerate(EDGE_INTEGERS):
        key = f"blob-{index}"
        blob = view.blobs(CONTENTS).put_if_absent(
            key=key, data=b"x", attributes={"canonicalization_version": number}
        )
        assert blob.attributes == {"canonicalization_version": number}
        written.blobs[key] = number
    for index, name in enumerate(EDGE_NAMES):
        key = f"handoff-{name}-{index}"
        view.records(HANDOFFS).insert(
            key=key,
            revision=1,
            attributes={"active_agent_id": name},
            record=DurableRecord(RECORD_TYPE, "0.1", {name: name}),
        )
        written.handoffs[key] = name
    written.check(backend)
    return written


def _log_states(backend: Backend) -> list[dict[str, Any]]:
    """Every event state of the storage log, as a follower reads it.

    On PostgreSQL a follower reads only events no running transaction can still precede;
    a transaction of another client of the server may hold that bound back for a while.
    """
    if isinstance(backend.driver, InMemoryDriver):
        return [state for _, _, state in backend.driver.log_after(0, 1_000_000)]
    deadline = time.monotonic() + FINAL_TIMEOUT
    while True:
        with backend.transaction():
            scope = backend.current_scope()
            assert scope is not None
            session: Session = scope.context
            committed = log_size(session)
            events = read_after(session, START, 1_000_000)
        if len(events) == committed or time.monotonic() > deadline:
            return [dict(event.state) for event in events]
        time.sleep(0.05)


def _execute(url: str, sql: str) -> None:
    """``sql`` on a connection of the test's own, as an operator would run it."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            conn.execute(sql)
        return
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(sql)


@pytest.fixture
def opened(store_url: str) -> Iterator[tuple[str, Backend]]:
    backend = open_backend(store_url, CATALOG)
    yield store_url, backend
    backend.close()


def test_every_accepted_value_reads_back_equal_through_every_path(
    opened: tuple[str, Backend], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url, backend = opened
    written = _write_everything(backend)
    written.check_log(_log_states(backend))
    if url == "memory:":
        return

    # Reopened: nothing was served from what the writing backend kept.
    backend.close()
    backend = open_backend(url, CATALOG)
    request.addfinalizer(backend.close)
    written.check(backend)
    assert audit_backend(backend).ok

    # The repair rewrites every row from the log, exactly.
    _execute(url, "DELETE FROM storage_records")
    _execute(url, "DELETE FROM storage_blobs")
    assert not audit_backend(backend).ok
    assert repair_backend(backend).changed
    assert audit_backend(backend).ok
    written.check(backend)

    # An export imported into the other kind of store reads back the same values.
    exported = io.BytesIO()
    export_store(url, exported)
    if url.startswith("sqlite:"):
        target = request.getfixturevalue("postgres_schema_url")
    else:
        target = f"sqlite://{tmp_path / 'imported.db'}"
    exported.seek(0)
    report = import_store(target, exported, name="values.jsonl")
    assert report.storage_audit is not None
    assert report.storage_audit.ok
    assert audit_store(target, CATALOG).ok
    imported = open_backend(target, CATALOG)
    request.addfinalizer(imported.close)
    written.check(imported)
    written.check_log(_log_states(imported))

    # The replay kit runs the exported log into memory, write by write.
    exported.seek(0)
    replayed = InMemoryBackend(CATALOG)
    apply_storage_events(
        replayed,
        (item for item in ExportReader(exported, "values.jsonl") if isinstance(item, LoggedEvent)),
    )
    written.check(replayed)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"x": -0.0}, r"\$\.x: -0\.0 has no canonical form"),
        ({"x": [math.nan]}, r"\$\.x\[0\]: nan is not a finite number"),
        ({"x": {"y": math.inf}}, r"\$\.x\.y: inf is not a finite number"),
        ({"x": 2**53}, r"\$\.x: integer 9007199254740992 exceeds 2\^53-1"),
        ({"x": -(2**63)}, r"\$\.x: integer -9223372036854775808 exceeds 2\^53-1"),
        ({"x": "a\ud800"}, r"\$\.x: string is not valid UTF-8 \(lone surrogate\)"),
        ({"\udfff": 1}, r"\$: string is not valid UTF-8 \(lone surrogate\)"),
        ({"x": "a\0b"}, r"\$\.x: string contains NUL"),
        ({1: "x"}, r"\$: object keys must be str, got int"),
        ({"x": {None: 1}}, r"\$\.x: object keys must be str, got NoneType"),
        ({"x": {("a",): 1}}, r"\$\.x: object keys must be str, got tuple"),
        ({"x": b"bytes"}, r"\$\.x: bytes is not a JSON-native value"),
        ({"x": {1, 2}}, r"\$\.x: set is not a JSON-native value"),
        ({"x": decimal.Decimal("1.5")}, r"\$\.x: Decimal is not a JSON-native value"),
        ({"x": MappingProxyType({})}, r"\$\.x: mappingproxy is not a JSON-native value"),
        ({"x": nested(MAX_DEPTH, 1)}, r"arrays and objects nest deeper than 100"),
    ],
    ids=repr,
)
def test_a_payload_that_could_not_read_back_is_refused_when_built(
    payload: dict[Any, Any], error: str
) -> None:
    """Refused before any backend sees it, with a ``SerializationError`` naming where."""
    with pytest.raises(SerializationError, match=error):
        DurableRecord(RECORD_TYPE, "0.1", payload)
