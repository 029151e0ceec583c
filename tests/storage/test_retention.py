"""Retention policies: declared per resource, applied by purging what they drop.

Every test runs on each store kind. A policy keeps the last N entries of each
stream or the records written within a duration; applying it purges the rest
(nothing of it reads back), keeps everything else as written, and can run
while writers write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    Resource,
    Retention,
    apply_retention,
    open_backend,
)
from nenjim.infrastructure.store.kinds import store_kinds
from nenjim.testing.plugin import NewStore

LOG = Resource("retained.log", "streams", retention=Retention(keep_last=2))
ROWS = Resource("retained.rows", "records", retention=Retention(max_age=timedelta(hours=1)))
PLAIN = Resource("plain.rows", "records")


def _record(value: object) -> DurableRecord:
    return DurableRecord("test.value", "1.0", {"value": value})


def _entries(*ids: str) -> list[AppendEntry]:
    return [AppendEntry(id=entry, record=_record(entry)) for entry in ids]


@pytest.fixture(params=[kind.name for kind in store_kinds()])
def backend(request: pytest.FixtureRequest, nenjim_new_store: NewStore) -> Iterator[Backend]:
    opened = open_backend(nenjim_new_store(request.param), [LOG, ROWS, PLAIN])
    yield opened
    opened.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "exactly one"),
        ({"keep_last": 2, "max_age": timedelta(days=1)}, "exactly one"),
        ({"keep_last": 0}, "positive integer"),
        ({"keep_last": True}, "positive integer"),
        ({"keep_last": 1.5}, "positive integer"),
        ({"max_age": timedelta(0)}, "positive timedelta"),
        ({"max_age": 3600}, "positive timedelta"),
    ],
)
def test_a_policy_that_keeps_nothing_sensible_is_refused(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Retention(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "policy", "message"),
    [
        ("blobs", Retention(keep_last=1), "blobs have no retention policy"),
        ("streams", Retention(max_age=timedelta(days=1)), "stream entries carry no time"),
        ("records", Retention(keep_last=1), "a records policy is max_age"),
    ],
)
def test_a_policy_a_resource_kind_cannot_follow_is_refused_at_declaration(
    kind: str, policy: Retention, message: str
) -> None:
    with pytest.raises(ValueError, match=f"resource r: {message}"):
        Resource("r", kind, retention=policy)


def test_a_retention_that_is_not_a_policy_is_refused() -> None:
    with pytest.raises(TypeError, match="retention must be a Retention"):
        Resource("r", "streams", retention={"keep_last": 1})  # type: ignore[arg-type]


def test_a_stream_keeps_its_last_entries_and_its_head(backend: Backend) -> None:
    log = backend.view.streams(LOG)
    log.append(stream="a", expected_head=0, entries=_entries("1", "2", "3", "4", "5"))
    log.append(stream="b", expected_head=0, entries=_entries("x"))

    report = apply_retention(backend)

    assert [(p.key, p.events, p.before) for p in report.purges] == [("a", 3, 4)]
    assert [(entry.position, entry.id) for entry in log.read(stream="a")] == [(4, "4"), (5, "5")]
    assert log.head(stream="a") == 5
    assert [entry.id for entry in log.read(stream="b")] == ["x"]
    assert apply_retention(backend).purges == ()


def test_records_older_than_the_age_are_purged_the_others_kept(backend: Backend) -> None:
    rows, plain = backend.view.records(ROWS), backend.view.records(PLAIN)
    rows.insert(key="old", revision=0, attributes={}, record=_record("old"))
    plain.insert(key="old", revision=0, attributes={}, record=_record("undeclared"))
    time.sleep(0.01)
    between = datetime.now(UTC)
    time.sleep(0.01)
    rows.insert(key="new", revision=0, attributes={}, record=_record("new"))

    report = apply_retention(backend, now=between + timedelta(hours=1))

    assert [(p.resource, p.key) for p in report.purges] == [(ROWS.id, "old")]
    assert rows.read("old") is None
    assert rows.history("old") == ()
    assert rows.read("new") is not None
    assert plain.read("old") is not None
    assert apply_retention(backend).purges == ()


def test_progress_is_told_resource_by_resource(backend: Backend) -> None:
    told: list[tuple[str, int, int]] = []

    apply_retention(backend, progress=lambda task, done, total: told.append((task, done, total)))

    assert told == [("retention", 0, 2), ("retention", 1, 2), ("retention", 2, 2)]


def test_retention_runs_while_a_writer_appends(backend: Backend) -> None:
    log = backend.view.streams(LOG)
    appended: list[str] = []
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for number in range(60):
                log.append(stream="w", expected_head=number, entries=_entries(f"e{number}"))
                appended.append(f"e{number}")
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    while writer.is_alive():
        apply_retention(backend)
    writer.join()
    apply_retention(backend)

    assert failures == []
    assert log.head(stream="w") == 60
    assert [entry.id for entry in log.read(stream="w")] == appended[-2:]
