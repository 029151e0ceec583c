"""On SQLite, lone reads (``Backend.run_reading``, and a root-view read outside any
transaction) run one at a time in the process, and writes neither wait for them nor hold
them up. Their work is Python and SQLite calls under the interpreter lock, which every
SQLite call lets go of: run side by side, each read hands the lock to another and waits to
get it back, and together they read less than one thread does alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nenjim.infrastructure.sqlite.storage import SQLiteBackend, SQLiteDriver
from nenjim.infrastructure.storage import DurableRecord
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES, WORKFLOW_STATES
from nenjim.infrastructure.storage.view import View

RECORD = DurableRecord("test.read", "0.1", {"value": "v"})


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[SQLiteBackend]:
    opened = SQLiteBackend(FIXTURE_RESOURCES, tmp_path / "store.db")
    opened.view.records(WORKFLOW_STATES).insert(key="k", revision=0, attributes={}, record=RECORD)
    yield opened
    opened.close()


@pytest.fixture
def overlap(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lone reads were inside the driver at once, at each entry (each stays a
    moment, to give another every chance to come in)."""
    inside, seen, guard = [0], [], threading.Lock()
    reads = SQLiteDriver.reads

    @contextmanager
    def counted(self: SQLiteDriver) -> Iterator[Any]:
        with guard:
            inside[0] += 1
            seen.append(inside[0])
        try:
            time.sleep(0.002)
            with reads(self) as session:
                yield session
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(SQLiteDriver, "reads", counted)
    return seen


def _read(view: View) -> object:
    return view.records(WORKFLOW_STATES).read("k")


def test_lone_reads_of_many_threads_run_one_at_a_time(
    backend: SQLiteBackend, overlap: list[int]
) -> None:
    def reader(number: int) -> None:
        for _ in range(10):
            if number % 2:
                assert backend.run_reading(_read) is not None
            else:
                assert backend.view.records(WORKFLOW_STATES).read("k") is not None

    threads = [threading.Thread(target=reader, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(overlap) == 80
    assert max(overlap) == 1


def test_a_write_goes_on_while_a_read_is_running(backend: SQLiteBackend) -> None:
    reading, written = threading.Event(), threading.Event()

    def slow_read(view: View) -> object:
        reading.set()
        assert written.wait(timeout=30), "the write waited for the read"
        return _read(view)

    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(backend.run_reading(slow_read)))
    thread.start()
    assert reading.wait(timeout=30)
    backend.view.records(WORKFLOW_STATES).insert(key="k2", revision=0, attributes={}, record=RECORD)
    written.set()
    thread.join(timeout=30)
    assert outcome
    assert outcome[0] is not None
