"""PostgreSQL writers recover on their own when their sessions are terminated.

The tests terminate only the sessions of their own pool: the driver names
them ``nenjim-storage:<schema>`` (libpq's fallback application name) and
every test has a schema of its own. ``NENJIM_POOL_FAULT_SECONDS`` lengthens
the repeated-termination run (default: a two-second slice).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from nenjim.infrastructure.persistence import CATALOG, Persistence
from nenjim.infrastructure.persistence.content_store import content_id
from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage import is_transient

FAULT_SECONDS = float(os.environ.get("NENJIM_POOL_FAULT_SECONDS", "2"))
POOL_TIMEOUT = 5.0
"""Far below the 15-25 s writers used to stall, far above a healthy reconnect."""
WRITERS = 4
SETTLE_TIMEOUT = 60.0


@pytest.fixture
def url(postgres_schema_url: str) -> str:
    """The test's schema, with a pool that keeps four connections open."""
    return postgres_schema_url.replace("pool_size=1&max_overflow=7", "pool_size=4&max_overflow=4")


@pytest.fixture
def backend(url: str) -> Iterator[PostgresBackend]:
    """A PostgreSQL backend on ``url`` with a short pool timeout."""
    opened = PostgresBackend(CATALOG, url, pool_timeout=POOL_TIMEOUT)
    yield opened
    opened.close()


@pytest.fixture
def admin(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection of the test's own, named so that it never matches the pool's name."""
    with psycopg.connect(postgres_url, autocommit=True, application_name="pool-admin") as conn:
        yield conn


def _application(backend: PostgresBackend) -> str:
    return f"nenjim-storage:{backend.schema}"


def _sessions(admin: psycopg.Connection[tuple[object, ...]], application: str) -> set[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application,)
    ).fetchall()
    return {int(str(row[0])) for row in rows}


def _terminate(admin: psycopg.Connection[tuple[object, ...]], application: str) -> int:
    rows = admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (application,),
    ).fetchall()
    return len(rows)


def test_terminating_every_idle_connection_does_not_stall_the_next_write(
    backend: PostgresBackend, admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    persistence = Persistence(backend)
    persistence.workflow_states.save("before", expected_revision=None, snapshot=_snapshot(0))
    application = _application(backend)
    idle = _sessions(admin, application)
    assert len(idle) >= 4
    assert _terminate(admin, application) == len(idle)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while _sessions(admin, application) & idle:
        assert time.monotonic() < deadline, "terminated sessions did not go away"
        time.sleep(0.01)

    # Each pooled connection is dead. The pool used to sleep 1 s, 2 s, 4 s ...
    # after each failed check, so this write ran into PoolTimeout.
    persistence.workflow_states.save("after", expected_revision=None, snapshot=_snapshot(1))
    assert persistence.workflow_states.load("after") is not None
    assert not _sessions(admin, application) & idle


@dataclass
class _Writer:
    """One writer thread's record: what it acknowledged and what failed, with when."""

    name: str
    acknowledged: list[str] = field(default_factory=list)
    transient: list[tuple[float, BaseException]] = field(default_factory=list)
    fatal: list[BaseException] = field(default_factory=list)
    first_success_after_fault: float | None = None


def test_writers_recover_from_repeated_terminations_without_losing_a_write(
    backend: PostgresBackend, admin: psycopg.Connection[tuple[object, ...]], url: str
) -> None:
    persistence = Persistence(backend)
    application = _application(backend)
    stop = threading.Event()
    fault_ended: list[float] = []
    writers = [_Writer(f"w{n}") for n in range(WRITERS)]

    def write(writer: _Writer) -> None:
        count = 0
        while not stop.is_set():
            text = f"{writer.name}-{count}"
            try:
                persistence.contents.put_text(text)
            except Exception as error:
                if not is_transient(error):
                    writer.fatal.append(error)
                    return
                writer.transient.append((time.monotonic(), error))
                continue
            writer.acknowledged.append(text)
            count += 1
            if fault_ended and writer.first_success_after_fault is None:
                writer.first_success_after_fault = time.monotonic() - fault_ended[0]

    threads = [threading.Thread(target=write, args=(writer,)) for writer in writers]
    for thread in threads:
        thread.start()
    terminated = 0
    try:
        end = time.monotonic() + FAULT_SECONDS
        while time.monotonic() < end:
            terminated += _terminate(admin, application)
            time.sleep(0.01)
        fault_ended.append(time.monotonic())
        deadline = fault_ended[0] + SETTLE_TIMEOUT
        while any(w.first_success_after_fault is None and not w.fatal for w in writers):
            assert time.monotonic() < deadline, "writers did not recover"
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join(SETTLE_TIMEOUT)

    assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
    assert terminated > 0
    assert [error for writer in writers for error in writer.fatal] == []
    late_timeouts = [
        error
        for writer in writers
        for at, error in writer.transient
        if at >= fault_ended[0] and isinstance(error, PoolTimeout)
    ]
    assert late_timeouts == []
    recovery = max(w.first_success_after_fault or 0.0 for w in writers)
    print(
        f"\n{terminated} sessions terminated in {FAULT_SECONDS:.1f} s; "
        f"every writer wrote again {recovery * 1000:.0f} ms after the fault ended"
    )
    acknowledged = [text for writer in writers for text in writer.acknowledged]
    assert acknowledged
    fresh = Persistence.open(url)
    try:
        missing = [t for t in acknowledged if not fresh.contents.exists(content_id(t.encode()))]
        assert missing == []
    finally:
        fresh.close()


def _snapshot(value: int) -> dict[str, object]:
    return {"fields": {"value": value}, "phase": None}
