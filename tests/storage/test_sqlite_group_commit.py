"""Group commit on SQLite: lone root-view operations of concurrent threads share one commit.

Batches are made deterministic by holding the leader inside its batch (an
operation that waits on an event) while other threads queue behind it; the
next batch then holds exactly the queued operations, in arrival order.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage import (
    AppendEntry,
    ConflictError,
    DurableRecord,
    NotFoundError,
    StreamEntry,
    TransactionError,
    View,
)
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.infrastructure.storage.entries import RecordEntry
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
)
from nenjim.infrastructure.store.group_commit import BATCH_LIMIT

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.group", "0.1", {"value": value})


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[SQLiteBackend]:
    opened = SQLiteBackend(FIXTURE_RESOURCES, tmp_path / "group.db")
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    yield opened
    opened.close()


class _Thread:
    """A thread running one call; its value or its exception once joined."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.value = call()
        except BaseException as error:
            self.error = error

    def join(self) -> _Thread:
        self._thread.join(TIMEOUT)
        assert not self._thread.is_alive(), "thread did not finish"
        return self


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


class _Batch:
    """Hold the leader in a batch; queue calls behind it one by one; release them."""

    def __init__(self, backend: SQLiteBackend) -> None:
        self.backend = backend
        self.release = threading.Event()
        self.entered = threading.Event()

        def hold(session: Session, driver: Any) -> Session:
            self.entered.set()
            assert self.release.wait(TIMEOUT)
            return session

        self.leader = _Thread(lambda: backend.view.run(hold))
        assert self.entered.wait(TIMEOUT)
        self.queued: list[_Thread] = []

    def queue(self, call: Callable[[], Any]) -> _Thread:
        """Start ``call`` on a thread and wait until it is queued (arrival order)."""
        group = self.backend.driver.group  # type: ignore[attr-defined]
        before = group.waiting
        thread = _Thread(call)
        _wait_until(lambda: group.waiting == before + 1)
        self.queued.append(thread)
        return thread

    def run(self) -> list[_Thread]:
        self.release.set()
        self.leader.join()
        return [thread.join() for thread in self.queued]


def _session_of(backend: SQLiteBackend) -> Callable[[], Session]:
    """A root-view operation whose value is its transaction's Session (kept alive, so
    that sessions compare by identity)."""
    return lambda: backend.view.run(lambda session, driver: session)


def test_operations_queued_behind_a_lone_one_commit_with_it(backend: SQLiteBackend) -> None:
    """The caller that found nobody running takes in, before it commits, what queued while
    its operation ran: one transaction (one Session) for all six."""
    batch = _Batch(backend)
    for _ in range(5):
        batch.queue(_session_of(backend))
    sessions = [thread.value for thread in batch.run()]
    assert all(session is batch.leader.value for session in sessions)


def test_a_commit_takes_in_what_queues_while_the_operations_it_took_in_run(
    backend: SQLiteBackend,
) -> None:
    batch = _Batch(backend)
    taken_in, release = threading.Event(), threading.Event()

    def hold(session: Session, driver: Any) -> Session:
        taken_in.set()
        assert release.wait(TIMEOUT)
        return session

    second = batch.queue(lambda: backend.view.run(hold))
    batch.release.set()
    assert taken_in.wait(TIMEOUT)  # run by the leader, inside its transaction
    third = batch.queue(_session_of(backend))
    release.set()
    batch.leader.join()
    assert second.join().value is batch.leader.value
    assert third.join().value is batch.leader.value


def test_a_commit_takes_in_at_most_its_limit_and_the_rest_commit_next(
    backend: SQLiteBackend,
) -> None:
    batch = _Batch(backend)
    queued = [batch.queue(_session_of(backend)) for _ in range(BATCH_LIMIT + 3)]
    batch.run()
    sessions = [thread.value for thread in queued]
    taken_in = BATCH_LIMIT - 1  # the leader's own operation is one of the commit's
    assert all(session is batch.leader.value for session in sessions[:taken_in])
    rest = sessions[taken_in:]
    assert all(session is rest[0] for session in rest)
    assert rest[0] is not batch.leader.value


def test_a_rejected_item_fails_alone_and_the_others_commit_in_order(
    backend: SQLiteBackend,
) -> None:
    journal = backend.view.streams(JOURNAL)
    states = backend.view.records(WORKFLOW_STATES)
    states.insert(key="taken", revision=0, attributes={}, record=_record("first"))

    def append(head: int, entry_id: str) -> Callable[[], tuple[StreamEntry, ...]]:
        return lambda: journal.append(
            stream=OWNER, expected_head=head, entries=[AppendEntry(entry_id, _record(entry_id))]
        )

    batch = _Batch(backend)
    first = batch.queue(append(0, "a"))
    stale = batch.queue(append(0, "x"))  # the head is 1 by now: a CAS conflict
    duplicate = batch.queue(
        lambda: states.insert(key="taken", revision=0, attributes={}, record=_record("second"))
    )
    second = batch.queue(append(1, "b"))
    missing_guard = batch.queue(
        lambda: backend.view.streams(JOURNAL).append(
            stream="nobody", expected_head=0, entries=[AppendEntry("n", _record("n"))]
        )
    )
    written = batch.queue(
        lambda: states.insert(key="fresh", revision=0, attributes={}, record=_record("fresh"))
    )
    batch.run()

    assert first.error is None
    assert second.error is None
    assert written.error is None
    assert isinstance(stale.error, ConflictError)
    assert isinstance(duplicate.error, ConflictError)
    assert isinstance(missing_guard.error, NotFoundError)
    entries = journal.read(stream=OWNER)
    assert [(entry.position, entry.id) for entry in entries] == [(1, "a"), (2, "b")]
    assert [entry.position for entry in second.value] == [2]
    assert states.fetch("taken").record == _record("first")
    assert states.fetch("fresh").record == _record("fresh")
    assert journal.head(stream="nobody") == 0
    assert audit_store(f"sqlite:///{backend.path}", FIXTURE_RESOURCES).ok


def test_a_lone_caller_whose_operation_fails_when_run_again_fails_alone(
    backend: SQLiteBackend,
) -> None:
    """An item the lone caller took in fails: everything runs again, each in a savepoint.
    Should the caller's own operation fail then, it fails alone: the others commit."""
    states = backend.view.records(WORKFLOW_STATES)
    states.insert(key="taken", revision=0, attributes={}, record=_record("first"))
    entered, release = threading.Event(), threading.Event()
    runs: list[Session] = []

    def lead(session: Session, driver: Any) -> str:
        runs.append(session)
        if len(runs) > 1:
            raise OSError("failed when run again")
        entered.set()
        assert release.wait(TIMEOUT)
        return "led"

    def insert(key: str) -> Callable[[], RecordEntry]:
        return lambda: states.insert(key=key, revision=0, attributes={}, record=_record(key))

    leader = _Thread(lambda: backend.view.run(lead))
    assert entered.wait(TIMEOUT)
    group = backend.driver.group  # type: ignore[attr-defined]
    duplicate = _Thread(insert("taken"))
    _wait_until(lambda: group.waiting == 1)
    fresh = _Thread(insert("fresh"))
    _wait_until(lambda: group.waiting == 2)
    release.set()
    assert isinstance(leader.join().error, OSError)
    assert isinstance(duplicate.join().error, ConflictError)
    assert fresh.join().error is None
    assert states.fetch("fresh").record == _record("fresh")


def test_a_batch_takes_savepoints_only_once_one_of_its_items_failed(
    backend: SQLiteBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Savepoints cost two statements per item; a batch whose items all succeed needs
    none. One where an item fails is rolled back and run again, each item in a
    savepoint: the others are committed once, the failing one fails alone."""
    statements: list[str] = []
    driver = backend.driver
    connect = driver._connect  # type: ignore[attr-defined]

    def traced() -> Any:
        connection = connect()
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(driver, "_connect", traced)
    states = backend.view.records(WORKFLOW_STATES)

    def insert(key: str) -> Callable[[], RecordEntry]:
        return lambda: states.insert(key=key, revision=0, attributes={}, record=_record(key))

    batch = _Batch(backend)
    for key in ("a", "b", "c"):
        batch.queue(insert(key))
    assert all(thread.error is None for thread in batch.run())
    assert statements, "the leader's statements were not traced"
    assert not [s for s in statements if "SAVEPOINT" in s]

    statements.clear()
    batch = _Batch(backend)
    first = batch.queue(insert("d"))
    taken = batch.queue(insert("a"))
    last = batch.queue(insert("e"))
    batch.run()
    assert first.error is None
    assert last.error is None
    assert isinstance(taken.error, ConflictError)
    # The leader's own operation, which took the three in, runs again with them.
    assert len([s for s in statements if s.startswith("SAVEPOINT")]) == 4
    assert [states.fetch(key).revision for key in ("a", "b", "c", "d", "e")] == [0] * 5
    assert [len(states.history(key)) for key in ("d", "e")] == [1, 1]
    assert audit_store(f"sqlite:///{backend.path}", FIXTURE_RESOURCES).ok


def test_an_item_that_raises_after_writing_leaves_nothing_behind(backend: SQLiteBackend) -> None:
    states = backend.view.records(WORKFLOW_STATES)

    class BoomError(Exception):
        pass

    def write_then_raise(session: Session, driver: Any) -> None:
        driver.insert_record(session, WORKFLOW_STATES, RecordEntry("half", 0, {}, _record("h")))
        raise BoomError("after the write")

    batch = _Batch(backend)
    before = batch.queue(
        lambda: states.insert(key="before", revision=0, attributes={}, record=_record("b"))
    )
    failing = batch.queue(lambda: backend.view.run(write_then_raise))
    after = batch.queue(
        lambda: states.insert(key="after", revision=0, attributes={}, record=_record("a"))
    )
    batch.run()

    assert before.error is None
    assert after.error is None
    assert isinstance(failing.error, BoomError)
    assert states.read("half") is None
    assert states.fetch("before").revision == 0
    assert states.fetch("after").revision == 0
    assert audit_store(f"sqlite:///{backend.path}", FIXTURE_RESOURCES).ok


def test_an_item_that_fails_with_an_anchor_queued_leaves_it_to_no_other_item(
    backend: SQLiteBackend,
) -> None:
    """An anchor waits in the shared transaction's context for its operation's first
    statement; an item that fails before sending it must not pass it on to the next
    item, which would then lock (and fail on) an anchor it never named."""
    executions = backend.view.records(EXECUTIONS)

    class BoomError(Exception):
        pass

    def queue_then_raise(session: Session, driver: Any) -> None:
        driver.lock_guard_with_next(session, ROOTS, "ghost")
        raise BoomError("before the anchor's statement")

    batch = _Batch(backend)
    failing = batch.queue(lambda: backend.view.run(queue_then_raise))
    after = batch.queue(
        lambda: executions.insert(
            key="run", revision=0, attributes={"owner": OWNER, "active": False}, record=_record("a")
        )
    )
    batch.run()

    assert isinstance(failing.error, BoomError)
    assert after.error is None
    assert executions.fetch("run").revision == 0
    assert audit_store(f"sqlite:///{backend.path}", FIXTURE_RESOURCES).ok


def test_an_error_after_the_items_ran_fails_every_item_and_keeps_none(
    backend: SQLiteBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    states = backend.view.records(WORKFLOW_STATES)
    batch = _Batch(backend)
    queued = [
        batch.queue(
            lambda n=n: states.insert(key=f"k{n}", revision=0, attributes={}, record=_record("v"))
        )
        for n in range(3)
    ]
    # Every item ran and was released; then the batch fails before its commit (as a
    # failed COMMIT would): no item may report success, and none may be kept.
    driver = backend.driver
    original = driver._run_item  # type: ignore[attr-defined]
    calls = {"n": 0}

    def run_item(session: Session, item: Any, *isolated: bool) -> None:
        original(session, item, *isolated)
        calls["n"] += 1
        if calls["n"] == 3:  # the last of the three queued items
            raise OSError("disk gone at commit time")

    monkeypatch.setattr(driver, "_run_item", run_item)
    batch.run()
    monkeypatch.undo()
    for thread in queued:
        assert isinstance(thread.error, OSError)
    assert [states.read(f"k{n}") for n in range(3)] == [None, None, None]


_WRITER = r"""
import sys, threading
from pathlib import Path
from nenjim.infrastructure.storage import AppendEntry, DurableRecord
from nenjim.infrastructure.storage.entries import RecordEntry
from nenjim.infrastructure.sqlite.storage import SQLiteBackend
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES, JOURNAL, ROOTS, WORKFLOW_STATES,
)

backend = SQLiteBackend(FIXTURE_RESOURCES, Path(sys.argv[1]))
lock = threading.Lock()
record = DurableRecord("test.group", "0.1", {"value": "x" * 200})

def say(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

def writer(number):
    root = f"w{number}"
    view = backend.view
    view.records(ROOTS).insert(key=root, revision=0, attributes={}, record=record)
    say(f"ack root {root}")
    head = 0
    for n in range(1_000_000):
        view.records(WORKFLOW_STATES).insert(
            key=f"{root}/{n}", revision=0, attributes={}, record=record
        )
        say(f"ack record {root}/{n}")
        view.streams(JOURNAL).append(
            stream=root, expected_head=head, entries=[AppendEntry(f"e{head + 1}", record)]
        )
        head += 1
        say(f"ack entry {root} {head}")

def stall(session, driver):
    driver.insert_record(session, WORKFLOW_STATES, RecordEntry("stalled", 0, {}, record))
    say("stalled")
    threading.Event().wait()

threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(8)]
for thread in threads:
    thread.start()
sys.stdin.readline()
backend.view.run(stall)
"""


def test_kill_9_in_the_middle_of_a_batch_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    acknowledged: list[str] = []
    try:
        assert process.stdout is not None
        assert process.stdin is not None
        while len(acknowledged) < 400:
            line = process.stdout.readline()
            assert line, "the writer ended early"
            acknowledged.append(line.strip())
        process.stdin.write("stall\n")
        process.stdin.flush()
        # Writers keep queueing behind the stalled batch; kill it there.
        while (line := process.stdout.readline().strip()) != "stalled":
            assert line, "the writer ended early"
            acknowledged.append(line)
        time.sleep(0.2)
        os.kill(process.pid, signal.SIGKILL)
        rest, _ = process.communicate(timeout=TIMEOUT)
        acknowledged.extend(line for line in rest.splitlines() if line)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL

    reopened = SQLiteBackend(FIXTURE_RESOURCES, path)
    try:
        view = reopened.view
        heads: dict[str, int] = {}
        for line in acknowledged:
            kind, *what = line.split()[1:]
            if kind == "root":
                assert view.records(ROOTS).read(what[0]) is not None
            elif kind == "record":
                assert view.records(WORKFLOW_STATES).read(what[0]) is not None, line
            else:
                heads[what[0]] = max(heads.get(what[0], 0), int(what[1]))
        for root, head in heads.items():
            assert view.streams(JOURNAL).head(stream=root) >= head
        assert view.records(WORKFLOW_STATES).read("stalled") is None
        assert len(heads) == 8
    finally:
        reopened.close()
    report = audit_store(f"sqlite:///{path}", FIXTURE_RESOURCES)
    assert report.ok, report.lines()


# grouped transactions (Backend.run_grouped): a whole transaction function as one item


def _grouped_insert(backend: SQLiteBackend, *keys: str, fail: bool = False) -> Callable[[], Any]:
    """A grouped transaction inserting ``keys`` (then raising, if ``fail``); its value is
    the Session it ran on."""

    def work(view: View) -> Session:
        for key in keys:
            view.records(WORKFLOW_STATES).insert(
                key=key, revision=0, attributes={}, record=_record(key)
            )
        if fail:
            raise ValueError(f"refused after writing {keys}")
        session: Session = view.run(lambda session, driver: session)
        return session

    return lambda: backend.run_grouped(work)


def test_grouped_transactions_queued_behind_a_lone_operation_share_its_commit(
    backend: SQLiteBackend,
) -> None:
    batch = _Batch(backend)
    queued = [batch.queue(_grouped_insert(backend, f"a{n}", f"b{n}")) for n in range(3)]
    batch.run()
    assert all(thread.error is None for thread in queued)
    assert all(thread.value is batch.leader.value for thread in queued)
    states = backend.view.records(WORKFLOW_STATES)
    assert all(states.read(f"{x}{n}") is not None for x in "ab" for n in range(3))


def test_a_grouped_transaction_that_raises_is_undone_alone(backend: SQLiteBackend) -> None:
    batch = _Batch(backend)
    first = batch.queue(_grouped_insert(backend, "first", "first-too"))
    refused = batch.queue(_grouped_insert(backend, "refused", "refused-too", fail=True))
    last = batch.queue(_grouped_insert(backend, "last"))
    batch.run()
    assert first.error is None
    assert last.error is None
    assert isinstance(refused.error, ValueError)
    states = backend.view.records(WORKFLOW_STATES)
    assert [states.read(key) is not None for key in ("first", "first-too", "last")] == [True] * 3
    assert states.read("refused") is None
    assert states.read("refused-too") is None


def test_a_grouped_transaction_whose_operation_failed_is_undone_though_it_caught_the_error(
    backend: SQLiteBackend,
) -> None:
    states = backend.view.records(WORKFLOW_STATES)
    states.insert(key="taken", revision=0, attributes={}, record=_record("taken"))

    def work(view: View) -> None:
        records = view.records(WORKFLOW_STATES)
        records.insert(key="written", revision=0, attributes={}, record=_record("w"))
        with contextlib.suppress(ConflictError):
            records.insert(key="taken", revision=0, attributes={}, record=_record("again"))

    with pytest.raises(TransactionError):
        backend.run_grouped(work)
    assert states.read("written") is None
    assert states.fetch("taken").record == _record("taken")


def test_a_grouped_transaction_inside_an_open_one_is_a_savepoint_of_it(
    backend: SQLiteBackend,
) -> None:
    def grouped_then_rolled_back() -> None:
        with backend.transaction():
            backend.run_grouped(
                lambda view: view.records(WORKFLOW_STATES).insert(
                    key="inner", revision=0, attributes={}, record=_record("inner")
                )
            )
            assert backend.view.records(WORKFLOW_STATES).read("inner") is not None
            raise RuntimeError("roll the outer transaction back")

    with pytest.raises(RuntimeError):
        grouped_then_rolled_back()
    assert backend.view.records(WORKFLOW_STATES).read("inner") is None
