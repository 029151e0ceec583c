"""Concurrent writers on the SQL backends: real threads (one connection each) and processes.

SQLite has one writer at a time, so these tests prove outcomes there; on
PostgreSQL they also show, with ``pg_blocking_pids()``, who waits on whose
row lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConflictError,
    DurableRecord,
    GuardRef,
    RevisionIs,
    UniqueConstraintError,
    canonical_json,
)
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.sql import events
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    GUARD_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    SETTINGS,
    WORKFLOW_STATES,
)
from storage_sql import log_stream, sql_rows

WRITERS = 8
ROUNDS = 4
OTHER_OWNER = "owner-2"
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0


@pytest.fixture
def backend(durable_store_url: str) -> Iterator[Backend]:
    """A backend with the roots of two owners."""
    opened = open_backend(durable_store_url, FIXTURE_RESOURCES)
    for owner in (OWNER, OTHER_OWNER):
        opened.view.records(ROOTS).insert(
            key=owner, revision=0, attributes={}, record=_record(owner)
        )
    yield opened
    opened.close()


@pytest.fixture
def pg_backend(postgres_schema_url: str) -> Iterator[Backend]:
    """A PostgreSQL backend with the roots of two owners."""
    opened = open_backend(postgres_schema_url, FIXTURE_RESOURCES)
    for owner in (OWNER, OTHER_OWNER):
        opened.view.records(ROOTS).insert(
            key=owner, revision=0, attributes={}, record=_record(owner)
        )
    yield opened
    opened.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.concurrency", "0.1", {"value": value})


def _race(action: Callable[[int], object], writers: int = WRITERS) -> list[BaseException | None]:
    """Run ``action(n)`` on ``writers`` threads released together; their errors (None: won)."""
    barrier = threading.Barrier(writers, timeout=TIMEOUT)
    outcomes: list[BaseException | None] = [None] * writers

    def contender(number: int) -> None:
        barrier.wait()
        try:
            action(number)
        except Exception as error:  # collected for the test thread
            outcomes[number] = error

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a writer thread hung"
    return outcomes


def _assert_log_replays_to_the_live_tables(backend: Backend) -> None:
    """Fold every event, stream by stream in version order, and compare with the projections."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        log = session.all(
            "SELECT topic, state FROM {events} ORDER BY originator_id, originator_version"
        )
        live_rows = session.all(
            "SELECT resource, key, revision, attributes, payload FROM {records}"
        )
        live_heads = session.all("SELECT resource, stream, head FROM {heads}")
        live_ids = session.all("SELECT resource, stream, entry_id FROM {ids}")
        load = session.dialect.load_json
    rows: dict[tuple[str, str], tuple[int, Any, str]] = {}
    streams: dict[tuple[str, str], list[str]] = {}
    for topic, raw in log:
        state = events.decode_event(topic, raw)
        if topic in events.RECORD_WRITES:
            payload = canonical_json.dumps(state["payload"])
            rows[state["resource"], state["key"]] = (
                state["revision"],
                state["attributes"],
                payload,
            )
        elif topic == events.RECORD_DELETED:
            del rows[state["resource"], state["key"]]
        elif topic == events.STREAM_ENTRY_APPENDED:
            streams.setdefault((state["resource"], state["stream"]), []).append(state["id"])
        elif topic == events.STREAM_DELETED:
            streams[state["resource"], state["stream"]] = []
    assert rows == {(r, k): (rev, load(attributes), p) for r, k, rev, attributes, p in live_rows}
    assert {key: len(ids) for key, ids in streams.items()} == {
        (r, s): head for r, s, head in live_heads
    }
    assert sorted((r, s, i) for (r, s), ids in streams.items() for i in ids) == sorted(
        tuple(row) for row in live_ids
    )


def _backend_pid(backend: Backend) -> int:
    scope = backend.current_scope()
    assert scope is not None
    pid: int = scope.context.connection.info.backend_pid
    return pid


def _wait_until_blocked(url: str, waiter: int, *holders: int) -> None:
    """Poll ``pg_blocking_pids`` until ``waiter`` waits on one of ``holders``.

    A second waiter for the same row waits on the first one (the tuple lock
    queue), not on the lock holder itself.
    """
    deadline = time.monotonic() + TIMEOUT
    with psycopg.connect(url.partition("?")[0], autocommit=True) as observer:
        while time.monotonic() < deadline:
            row = observer.execute("SELECT pg_blocking_pids(%s)", (waiter,)).fetchone()
            if row is not None and set(holders) & set(row[0]):
                return
            time.sleep(0.01)
    raise AssertionError(f"backend {waiter} never waited on any of {holders}")


def _blocked_by(url: str, waiter: int) -> list[int]:
    with psycopg.connect(url.partition("?")[0], autocommit=True) as observer:
        row = observer.execute("SELECT pg_blocking_pids(%s)", (waiter,)).fetchone()
    return [] if row is None else list(row[0])


# threads --------------------------------------------------------------------


def test_concurrent_admissions_under_one_owner_have_one_winner(backend: Backend) -> None:
    def admit(number: int) -> None:
        with backend.transaction() as view:
            view.records(EXECUTIONS).insert(
                key=f"run-{number}",
                revision=0,
                attributes={"owner": OWNER, "active": True},
                record=_record(str(number)),
            )

    outcomes = _race(admit)
    assert outcomes.count(None) == 1
    losers = [error for error in outcomes if error is not None]
    assert all(isinstance(error, UniqueConstraintError) for error in losers), losers
    assert {(e.resource, e.constraint) for e in losers if isinstance(e, UniqueConstraintError)} == {
        (EXECUTIONS.id, "one_active_owner")
    }
    active = backend.view.records(EXECUTIONS).scan(
        index="owner_active", equals={"owner": OWNER, "active": True}
    )
    assert [entry.key for entry in active] == [f"run-{outcomes.index(None)}"]
    _assert_log_replays_to_the_live_tables(backend)


def test_record_cas_race_has_one_winner_per_revision_and_the_log_loses_nothing(
    backend: Backend,
) -> None:
    records = backend.view.records(WORKFLOW_STATES)
    records.insert(key="wf", revision=1, attributes={}, record=_record("start"))
    winners = []
    for round_ in range(ROUNDS):
        revision = round_ + 1

        def save(number: int, revision: int = revision) -> None:
            records.replace(
                key="wf",
                expected_revision=revision,
                next_revision=revision + 1,
                attributes={},
                record=_record(f"writer {number} round {revision}"),
            )

        outcomes = _race(save)
        assert outcomes.count(None) == 1
        assert all(isinstance(error, ConflictError) for error in outcomes if error is not None)
        assert not any(isinstance(error, UniqueConstraintError) for error in outcomes)
        winners.append(f"writer {outcomes.index(None)} round {revision}")

    live = records.fetch("wf")
    assert live.revision == ROUNDS + 1
    log = log_stream(backend, events.record_stream(WORKFLOW_STATES.id, "wf"))
    # Replaying the log gives the live row: every revision once, no lost update.
    assert [version for version, _, _ in log] == list(range(1, ROUNDS + 2))
    assert [topic for _, topic, _ in log] == [events.RECORD_INSERTED] + [
        events.RECORD_REPLACED
    ] * ROUNDS
    assert [state["revision"] for _, _, state in log] == list(range(1, ROUNDS + 2))
    assert [state["payload"]["value"] for _, _, state in log] == ["start", *winners]
    replayed = log[-1][2]
    assert (replayed["revision"], replayed["payload"]) == (live.revision, live.record.payload)
    assert [entry.revision for entry in records.history("wf")] == list(range(1, ROUNDS + 2))
    _assert_log_replays_to_the_live_tables(backend)


def test_stream_append_race_has_one_winner_per_head_and_the_log_loses_nothing(
    backend: Backend,
) -> None:
    journal = backend.view.streams(JOURNAL)
    winners = []
    for head in range(ROUNDS):

        def append(number: int, head: int = head) -> None:
            journal.append(
                stream=OWNER,
                expected_head=head,
                entries=[AppendEntry(f"w{number}-h{head}", _record(str(number)))],
            )

        outcomes = _race(append)
        assert outcomes.count(None) == 1
        assert all(isinstance(error, ConflictError) for error in outcomes if error is not None)
        winners.append(f"w{outcomes.index(None)}-h{head}")

    stored = journal.read(stream=OWNER)
    assert [(entry.position, entry.id) for entry in stored] == list(enumerate(winners, start=1))
    log = log_stream(backend, events.entry_stream(JOURNAL.id, OWNER))
    assert [(version, state["id"]) for version, _, state in log] == list(
        enumerate(winners, start=1)
    )
    assert {topic for _, topic, _ in log} == {events.STREAM_ENTRY_APPENDED}
    ids = sql_rows(
        backend,
        "SELECT entry_id FROM {ids} WHERE resource = ? AND stream = ? ORDER BY entry_id",
        (JOURNAL.id, OWNER),
    )
    assert [row[0] for row in ids] == sorted(winners)
    _assert_log_replays_to_the_live_tables(backend)


# PostgreSQL row locks ---------------------------------------------------------


def _spawn(body: Callable[[], None], outcomes: dict[str, BaseException | None], name: str) -> Any:
    def target() -> None:
        try:
            body()
            outcomes[name] = None
        except Exception as error:  # checked by the test thread
            outcomes[name] = error

    thread = threading.Thread(target=target)
    thread.start()
    return thread


def _pid_of(pids: dict[str, int], name: str) -> int:
    deadline = time.monotonic() + TIMEOUT
    while name not in pids:
        assert time.monotonic() < deadline, f"{name} never started its transaction"
        time.sleep(0.01)
    return pids[name]


def test_same_anchor_writers_wait_on_the_guard_lock_while_another_anchor_proceeds(
    pg_backend: Backend, postgres_schema_url: str
) -> None:
    backend = pg_backend
    holding, release = threading.Event(), threading.Event()
    pids: dict[str, int] = {}
    outcomes: dict[str, BaseException | None] = {}

    def holder() -> None:
        # An agent's save: a child row under the anchor, then the anchor's CAS.
        with backend.transaction() as view:
            view.records(EXECUTIONS).insert(
                key="run-a",
                revision=0,
                attributes={"owner": OWNER, "active": False},
                record=_record("a"),
            )
            view.records(ROOTS).replace(
                key=OWNER, expected_revision=0, next_revision=1, attributes={}, record=_record("a")
            )
            pids["holder"] = _backend_pid(backend)
            holding.set()
            assert release.wait(TIMEOUT)

    def child() -> None:
        with backend.transaction() as view:
            pids["child"] = _backend_pid(backend)
            view.records(EXECUTIONS).insert(
                key="run-b",
                revision=0,
                attributes={"owner": OWNER, "active": True},
                record=_record("b"),
            )

    def stale_cas() -> None:
        with backend.transaction() as view:
            pids["cas"] = _backend_pid(backend)
            view.records(ROOTS).replace(
                key=OWNER, expected_revision=0, next_revision=1, attributes={}, record=_record("c")
            )

    threads = [_spawn(holder, outcomes, "holder")]
    assert holding.wait(TIMEOUT)
    threads.append(_spawn(child, outcomes, "child"))
    _wait_until_blocked(postgres_schema_url, _pid_of(pids, "child"), pids["holder"])
    threads.append(_spawn(stale_cas, outcomes, "cas"))
    _wait_until_blocked(postgres_schema_url, _pid_of(pids, "cas"), pids["holder"], pids["child"])

    # A writer under another anchor does not wait for the held one.
    other = backend.view.records(EXECUTIONS).insert(
        key="other-run",
        revision=0,
        attributes={"owner": OTHER_OWNER, "active": True},
        record=_record("other"),
    )
    assert other.revision == 0
    assert pids["holder"] in _blocked_by(postgres_schema_url, pids["child"])
    assert "child" not in outcomes

    release.set()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a writer thread hung"
    assert outcomes["holder"] is None
    assert outcomes["child"] is None
    # The stale writer re-read the anchor after the lock: a plain revision conflict.
    assert isinstance(outcomes["cas"], ConflictError)
    assert not isinstance(outcomes["cas"], UniqueConstraintError)
    root = backend.view.records(ROOTS).fetch(OWNER)
    assert (root.revision, root.record.payload) == (1, {"value": "a"})
    assert backend.view.records(EXECUTIONS).fetch("run-b").attributes["active"] is True


def test_database_index_refuses_a_racing_duplicate_the_pre_check_missed(
    pg_backend: Backend, postgres_schema_url: str
) -> None:
    """Two unguarded inserts with one ``code``: the second passes the pre-check, then waits
    on the partial unique index and fails with the constraint's error once the first commits."""
    backend = pg_backend
    holding, release = threading.Event(), threading.Event()
    pids: dict[str, int] = {}
    item = {"label": "x", "quantity": 1, "reserved": None, "available": True, "flagged": None}

    def holder() -> None:
        with backend.transaction() as view:
            view.records(INVENTORY_ITEMS).insert(
                key="first", revision=0, attributes={**item, "code": "C-1"}, record=_record("1")
            )
            pids["holder"] = _backend_pid(backend)
            holding.set()
            assert release.wait(TIMEOUT)

    def racer() -> None:
        with backend.transaction() as view:
            pids["racer"] = _backend_pid(backend)
            view.records(INVENTORY_ITEMS).insert(
                key="second",
                revision=0,
                attributes={**item, "code": "C-1"},
                record=_record("2"),
            )

    outcomes: dict[str, BaseException | None] = {}
    threads = [_spawn(holder, outcomes, "holder")]
    assert holding.wait(TIMEOUT)
    threads.append(_spawn(racer, outcomes, "racer"))
    _wait_until_blocked(postgres_schema_url, _pid_of(pids, "racer"), pids["holder"])
    release.set()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a writer thread hung"

    assert outcomes["holder"] is None
    error = outcomes["racer"]
    assert isinstance(error, UniqueConstraintError)
    assert (error.resource, error.constraint) == (INVENTORY_ITEMS.id, "unique_code")
    assert isinstance(error.__cause__, psycopg.errors.UniqueViolation)
    assert backend.view.records(INVENTORY_ITEMS).read("second") is None
    assert log_stream(backend, events.record_stream(INVENTORY_ITEMS.id, "second")) == []


# processes --------------------------------------------------------------------

_CONTENDER = """
import json, sys
from nenjim.infrastructure.storage import ConflictError, DurableRecord, UniqueConstraintError
from nenjim.infrastructure.storage import canonical_json
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS, FIXTURE_RESOURCES, OWNER
from nenjim.infrastructure.storage.testing.resources import WORKFLOW_STATES

url, number = sys.argv[1], sys.argv[2]
backend = open_backend(url, FIXTURE_RESOURCES)
record = DurableRecord("test.concurrency", "0.1", {"value": number})
print("ready", flush=True)
sys.stdin.readline()
result = {}
try:
    backend.view.records(EXECUTIONS).insert(
        key="run-" + number, revision=0, attributes={"owner": OWNER, "active": True}, record=record
    )
    result["admit"] = "won"
except UniqueConstraintError as error:
    result["admit"] = "unique:" + error.constraint
try:
    backend.view.records(WORKFLOW_STATES).replace(
        key="wf", expected_revision=1, next_revision=2, attributes={}, record=record
    )
    result["cas"] = "won"
except ConflictError:
    result["cas"] = "conflict"
backend.close()
print(json.dumps(result), flush=True)
"""


def test_processes_racing_admission_and_cas_have_one_winner_each(
    backend: Backend, durable_store_url: str
) -> None:
    backend.view.records(WORKFLOW_STATES).insert(
        key="wf", revision=1, attributes={}, record=_record("start")
    )
    contenders = [
        subprocess.Popen(
            [sys.executable, "-c", _CONTENDER, durable_store_url, str(number)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for number in range(3)
    ]
    try:
        for process in contenders:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in contenders:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in contenders:
            output, _ = process.communicate(timeout=TIMEOUT)
            assert process.returncode == 0
            results.append(json.loads(output.strip().splitlines()[-1]))
    finally:
        for process in contenders:
            if process.poll() is None:
                process.kill()
    assert sorted(result["admit"] for result in results) == [
        "unique:one_active_owner",
        "unique:one_active_owner",
        "won",
    ]
    assert sorted(result["cas"] for result in results) == ["conflict", "conflict", "won"]
    active = backend.view.records(EXECUTIONS).scan(
        index="owner_active", equals={"owner": OWNER, "active": True}
    )
    assert len(active) == 1
    assert backend.view.records(WORKFLOW_STATES).fetch("wf").revision == 2
    _assert_log_replays_to_the_live_tables(backend)


def _lock_now(backend: Backend, resource_id: str, key: str) -> None:
    """Lock a records row from this thread without waiting (``LockNotAvailable`` if another
    transaction holds it), and let it go at once."""
    with backend.transaction():
        scope = backend.current_scope()
        assert scope is not None
        session: Session = scope.context
        found = session.one(
            "SELECT 1 FROM {records} WHERE resource = ? AND key = ? FOR UPDATE NOWAIT",
            (resource_id, key),
        )
        assert found is not None


def test_delete_matching_via_key_locks_every_rows_anchor_before_any_row(
    postgres_schema_url: str,
) -> None:
    """Each row of a resource guarded via its key is a child of the anchor its key names:
    ``delete_matching`` takes those anchors (parents first, in key order) and deletes
    only the rows that still match under them."""
    backend = open_backend(postgres_schema_url, GUARD_RESOURCES)
    holding, release = threading.Event(), threading.Event()
    pids: dict[str, int] = {}
    outcomes: dict[str, BaseException | None] = {}
    try:
        for owner in (OWNER, OTHER_OWNER):
            backend.view.records(ROOTS).insert(
                key=owner, revision=0, attributes={}, record=_record(owner)
            )
            backend.view.records(SETTINGS).insert(
                key=owner, revision=0, attributes={"theme": "dark"}, record=_record(owner)
            )

        def holder() -> None:
            # Holds the second owner's anchor while its setting is at revision 0.
            with backend.transaction() as view:
                view.check(
                    guards=[GuardRef(ROOTS, OTHER_OWNER)],
                    conditions=[RevisionIs(SETTINGS, OTHER_OWNER, 0)],
                )
                pids["holder"] = _backend_pid(backend)
                holding.set()
                assert release.wait(TIMEOUT)
                view.records(SETTINGS).replace(
                    key=OTHER_OWNER,
                    expected_revision=0,
                    next_revision=1,
                    attributes={"theme": "light"},
                    record=_record("light"),
                )

        def deleter() -> None:
            with backend.transaction() as view:
                pids["deleter"] = _backend_pid(backend)
                view.records(SETTINGS).delete_matching(index="theme", equals={"theme": "dark"})

        threads = [_spawn(holder, outcomes, "holder")]
        assert holding.wait(TIMEOUT)
        threads.append(_spawn(deleter, outcomes, "deleter"))
        _wait_until_blocked(postgres_schema_url, _pid_of(pids, "deleter"), pids["holder"])
        # Waiting for a parent, the deleter holds no child row.
        for owner in (OWNER, OTHER_OWNER):
            _lock_now(backend, SETTINGS.id, owner)
        release.set()
        for thread in threads:
            thread.join(TIMEOUT)
            assert not thread.is_alive(), "a writer thread hung"
        assert outcomes == {"holder": None, "deleter": None}
        # The holder's replace went through; the deleter then left the row it no longer matched.
        settings = backend.view.records(SETTINGS)
        assert settings.read(OWNER) is None
        kept = settings.fetch(OTHER_OWNER)
        assert (kept.revision, kept.attributes["theme"]) == (1, "light")
    finally:
        release.set()
        backend.close()


def test_a_delete_locks_the_anchor_its_row_names_once_written_again_under_another(
    pg_backend: Backend, postgres_schema_url: str
) -> None:
    """A delete reads the row, then locks the anchor it names; a row deleted and written
    again under another anchor meanwhile is deleted only under that anchor's lock too."""
    backend = pg_backend
    backend.view.records(EXECUTIONS).insert(
        key="run", revision=0, attributes={"owner": OWNER, "active": False}, record=_record("a")
    )
    holding, moved, deleted, release = (threading.Event() for _ in range(4))
    pids: dict[str, int] = {}
    outcomes: dict[str, BaseException | None] = {}

    def holder() -> None:
        with backend.transaction() as view:
            view.check(guards=[GuardRef(ROOTS, OWNER)], conditions=[])
            pids["holder"] = _backend_pid(backend)
            holding.set()
            assert moved.wait(TIMEOUT)
            runs = view.records(EXECUTIONS)
            runs.delete(key="run")
            runs.insert(
                key="run",
                revision=0,
                attributes={"owner": OTHER_OWNER, "active": False},
                record=_record("b"),
            )

    def deleter() -> None:
        with backend.transaction() as view:
            pids["deleter"] = _backend_pid(backend)
            view.records(EXECUTIONS).delete(key="run")
            deleted.set()
            assert release.wait(TIMEOUT)

    try:
        threads = [_spawn(holder, outcomes, "holder")]
        assert holding.wait(TIMEOUT)
        threads.append(_spawn(deleter, outcomes, "deleter"))
        _wait_until_blocked(postgres_schema_url, _pid_of(pids, "deleter"), pids["holder"])
        moved.set()
        threads[0].join(TIMEOUT)
        assert deleted.wait(TIMEOUT)
        # The row it deleted names the other owner: the deleter holds that anchor too.
        with pytest.raises(psycopg.errors.LockNotAvailable):
            _lock_now(backend, ROOTS.id, OTHER_OWNER)
    finally:
        moved.set()
        release.set()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a writer thread hung"
    assert outcomes == {"holder": None, "deleter": None}
    assert backend.view.records(EXECUTIONS).read("run") is None
