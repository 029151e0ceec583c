"""A read-only scope (``Backend.reading``, ``Backend.run_reading``) refuses a write
before it runs, on every backend: on SQLite and PostgreSQL its statements run without a
transaction, so a write there would commit alone. A transaction opened inside it may
write, and reads of every kind go through."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    TransactionError,
    View,
)
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)

_V1 = {"canonicalization_version": 1}


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.read-only", "0.1", {"value": value})


@pytest.fixture
def backend(store_url: str) -> Iterator[Backend]:
    opened = open_backend(store_url, FIXTURE_RESOURCES)
    view = opened.view
    view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("root"))
    view.records(WORKFLOW_STATES).insert(key="k", revision=0, attributes={}, record=_record("k"))
    view.streams(JOURNAL).append(
        stream=OWNER, expected_head=0, entries=[AppendEntry("a", _record("a"))]
    )
    view.blobs(CONTENT_BLOBS).put_if_absent(key="b", data=b"bytes", attributes=_V1)
    yield opened
    opened.close()


WRITES: dict[str, Callable[[View], Any]] = {
    "record insert": lambda view: view.records(WORKFLOW_STATES).insert(
        key="new", revision=0, attributes={}, record=_record("new")
    ),
    "record replace": lambda view: view.records(WORKFLOW_STATES).replace(
        key="k", expected_revision=0, next_revision=1, attributes={}, record=_record("k1")
    ),
    "record delete": lambda view: view.records(WORKFLOW_STATES).delete(key="k"),
    "record purge": lambda view: view.records(WORKFLOW_STATES).purge(key="k"),
    "stream append": lambda view: view.streams(JOURNAL).append(
        stream=OWNER, expected_head=1, entries=[AppendEntry("b", _record("b"))]
    ),
    "stream delete": lambda view: view.streams(JOURNAL).delete(stream=OWNER),
    "blob put": lambda view: view.blobs(CONTENT_BLOBS).put_if_absent(
        key="new", data=b"new", attributes=_V1
    ),
    "blob purge": lambda view: view.blobs(CONTENT_BLOBS).purge(key="b"),
}


def _everything(view: View) -> tuple[Any, ...]:
    records, streams, blobs = (
        view.records(WORKFLOW_STATES),
        view.streams(JOURNAL),
        view.blobs(CONTENT_BLOBS),
    )
    row = records.read("k")
    return (
        None if row is None else (row.revision, row.record),
        records.read("new") is not None,
        [entry.id for entry in streams.read(stream=OWNER)],
        streams.head(stream=OWNER),
        blobs.fetch("b").data if blobs.exists("b") else None,
        blobs.exists("new"),
    )


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_in_a_read_only_scope_is_refused_and_writes_nothing(
    backend: Backend, write: str
) -> None:
    before = backend.run_reading(_everything)
    with pytest.raises(TransactionError, match="read-only scope"):
        backend.run_reading(WRITES[write])
    with pytest.raises(TransactionError, match="read-only scope"), backend.reading() as view:
        WRITES[write](view)
    with pytest.raises(TransactionError, match="read-only scope"), backend.reading():
        WRITES[write](backend.view)  # the root view joins the scope
    assert backend.run_reading(_everything) == before


def test_reads_of_every_kind_go_through_a_read_only_scope(backend: Backend) -> None:
    with backend.reading() as view:
        found = _everything(view)
        assert view.records(WORKFLOW_STATES).history("k")[0].revision == 0
        assert view.check(guards=[], conditions=[]) is True
    assert found == ((0, _record("k")), False, ["a"], 1, b"bytes", False)


def test_a_transaction_inside_a_read_only_scope_may_write(backend: Backend) -> None:
    with backend.reading() as view:
        with backend.transaction() as inner:
            WRITES["record insert"](inner)
        assert view.records(WORKFLOW_STATES).read("new") is not None
    with (
        backend.transaction(),
        backend.reading() as view,  # a read-only savepoint
        pytest.raises(TransactionError, match="read-only scope"),
    ):
        WRITES["blob put"](view)
    assert backend.view.records(WORKFLOW_STATES).read("new") is not None
    assert not backend.view.blobs(CONTENT_BLOBS).exists("new")
