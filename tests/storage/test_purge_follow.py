"""A follower of the storage log after a purge: no position moves, the removed events read as
stubs, and one marker at a new position names what to drop. On every store kind."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from nenjim.infrastructure.persistence.storage_log import StorageLog
from nenjim.infrastructure.storage import AppendEntry, Backend, DurableRecord, Purge
from nenjim.infrastructure.storage.follow.log import START, StoredEvent
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)


@pytest.fixture
def backend(nenjim_store_url: str) -> Iterator[Backend]:
    opened = open_backend(nenjim_store_url, FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    yield opened
    opened.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.follow", "0.1", {"value": value})


def _events(backend: Backend) -> list[StoredEvent]:
    """Every event committed so far, once all are final: on PostgreSQL an event is read
    only when no older transaction of the server still runs (another test's, elsewhere)."""
    log = StorageLog(backend)
    horizon, deadline = log.commit_horizon(), time.monotonic() + 60
    while not log.is_final(horizon):
        assert time.monotonic() < deadline, "the events written never became final"
        time.sleep(0.05)
    return log.read_after(START, 1000)


def test_a_follower_reads_stubs_in_place_and_one_marker_after_them(backend: Backend) -> None:
    view = backend.view
    workflows = view.records(WORKFLOW_STATES)
    workflows.insert(key="wf", revision=0, attributes={}, record=_record("one"))
    workflows.replace(
        key="wf", expected_revision=0, next_revision=1, attributes={}, record=_record("two")
    )
    view.streams(JOURNAL).append(
        stream=OWNER, expected_head=0, entries=[AppendEntry(n, _record(n)) for n in "abc"]
    )
    before = _events(backend)

    made = workflows.purge(key="wf")
    view.streams(JOURNAL).purge(stream=OWNER, before=3)
    after = _events(backend)

    assert [e.position for e in after[: len(before)]] == [e.position for e in before]
    stubs = [e for e in after if e.is_stub]
    assert [before.index(next(b for b in before if b.position == s.position)) for s in stubs] == [
        1,
        2,
        3,
        4,
    ]
    assert all("value" not in str(s.state) for s in stubs)
    markers = [e.purge for e in after if e.purge is not None]
    assert markers[0] == made
    assert [(m.kind, m.key, m.events, m.before) for m in markers] == [
        ("records", "wf", 2, None),
        ("streams", OWNER, 2, 3),
    ]
    assert isinstance(markers[0], Purge)
    assert not any(e.is_stub or e.purge for e in before)
