"""The agent-runs read model over a Persistence store: decode, persist, follow, query.

The fold is :mod:`nenjim.projections.agent_runs`; this module is its glue to the
storage log. It turns each ``agent.executions`` event of ``storage_events``
into the fold's plain events, folds them in process, and keeps the runs as a
persisted projection of the store (:mod:`nenjim.infrastructure.tracking.projections`),
rows and position written in one transaction. A row is a run as an event left
it, at that event's position; a write adds the runs that changed since the
last one, so the latest row of an execution id is its run.

A purge of an execution record leaves stubs (skipped: they name no run) and
a marker: the fold drops the execution's run, and the next write deletes
every row of it, so nothing built from the purged payloads stays.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from eventsourcing.persistence import Tracking

from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.catalog import EXECUTIONS
from nenjim.infrastructure.persistence.errors import UnsupportedBackendError
from nenjim.infrastructure.persistence.legacy_projections import drop_legacy_projections
from nenjim.infrastructure.persistence.storage_log import StorageLog
from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.follow.log import START, StoredEvent
from nenjim.infrastructure.storage.sql.events import RECORD_DELETED, RECORD_WRITES
from nenjim.infrastructure.store.errors import RebuildTimeoutError
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.tracking import follow as follower
from nenjim.infrastructure.tracking.projections import (
    Batch,
    Forget,
    ProjectionTable,
    Row,
    projection_recorder,
)
from nenjim.projections.agent_runs import (
    AgentRun,
    ExecutionDeleted,
    ExecutionSaved,
    RunEvent,
    evolve,
    timeline,
)

DEFAULT_SYNC_TIMEOUT = 30.0
"""Seconds :meth:`AgentRuns.sync` waits for events to become final."""

DEFAULT_BATCH = 1000
"""Events folded between two writes of the rows."""

DEFAULT_REBUILD_WAIT = 30.0
"""Seconds a rebuild waits for transactions older than the events it must cover."""

NAME = "agent-runs"
"""The projection's name in statuses and on the command line."""

TABLE = ProjectionTable(
    NAME,
    "agent_runs",
    (
        ("position", "integer"),
        ("execution_id", "text"),
        ("agent_id", "text"),
        ("status", "text"),
        ("phase", "text"),
        ("started_at", "text"),
        ("updated_at", "text"),
        ("ended_at", "optional text"),
        ("terminal_reason", "optional text"),
        ("revisions", "integer"),
        ("deleted", "integer"),
    ),
)


def run_event(event: StoredEvent) -> RunEvent | None:
    """The fold's event for one storage event, or ``None`` if it is not about an Agent run."""
    state = event.state
    if state.get("resource") != EXECUTIONS.id:
        return None
    position = event.position.notification_id
    if event.topic == RECORD_DELETED:
        return ExecutionDeleted(position, _text(state, "key", position))
    if event.topic not in RECORD_WRITES:
        return None
    payload = state.get("payload")
    if not isinstance(payload, Mapping):
        raise SerializationError(f"storage event {position}: execution payload is not an object")
    revision = payload.get("execution_revision")
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise SerializationError(f"storage event {position}: execution_revision is not a number")
    reason = payload.get("terminal_reason")
    if reason is not None and not isinstance(reason, str):
        raise SerializationError(f"storage event {position}: terminal_reason is not text")
    return ExecutionSaved(
        position,
        _text(payload, "execution_id", position),
        _text(payload, "agent_id", position),
        revision,
        _text(payload, "status", position),
        _text(payload, "phase", position),
        _text(payload, "created_at", position),
        _text(payload, "updated_at", position),
        reason,
    )


def purged_execution(event: StoredEvent) -> str | None:
    """The execution id whose run a purge marker drops, or ``None`` for any other event."""
    marker = event.purge
    if marker is None or marker.kind != "records" or marker.resource != EXECUTIONS.id:
        return None
    return marker.key


def run_events(events: Iterable[StoredEvent]) -> list[RunEvent]:
    """The fold's events among ``events``, in order."""
    return [found for event in events if (found := run_event(event)) is not None]


def _text(values: Mapping[str, Any], name: str, position: int) -> str:
    value = values.get(name)
    if not isinstance(value, str):
        raise SerializationError(f"storage event {position}: {name} is not text")
    return value


class RunsFold:
    """The runs folded from the storage log so far, and where each last changed."""

    def __init__(self) -> None:
        self.runs: dict[str, AgentRun] = {}
        self.changed: dict[str, int] = {}
        """Execution id -> the position of the event that last changed its run."""
        self.position = 0
        """How many events of the log were folded."""
        self.resume = START
        self.dropped: dict[str, int] = {}
        """Execution id -> the position of the purge that dropped its run (until written)."""

    def load(self, rows: Iterable[Row], position: int, log: StorageLog) -> None:
        """Take the persisted rows (in position order, so an execution's latest wins)."""
        for row in rows:
            run = _run(row)
            self.runs[run.execution_id] = run
            self.changed[run.execution_id] = int(row[0] or 0)
        self.position = position
        self.resume = log.position_at(position)

    def apply(self, events: Sequence[StoredEvent]) -> None:
        """Fold ``events`` (the next ones in log order)."""
        for event in events:
            self.position += 1
            if event.is_stub:
                continue  # what the purge removed; its marker follows
            purged = purged_execution(event)
            if purged is not None:
                self.runs.pop(purged, None)
                self.changed.pop(purged, None)
                self.dropped[purged] = self.position
                continue
            decoded = run_event(event)
            if decoded is None:
                continue
            run = evolve(self.runs.get(decoded.execution_id), decoded)
            if run is not None:
                self.runs[decoded.execution_id] = run
                self.changed[decoded.execution_id] = self.position
        if events:
            self.resume = events[-1].position

    def rows_after(self, position: int) -> list[Row]:
        """A row for each run that changed after ``position``, in position order."""
        return [
            _row(self.runs[key], at)
            for key, at in sorted(self.changed.items(), key=lambda item: item[1])
            if at > position
        ]

    def forgotten_after(self, position: int) -> list[Forget]:
        """The rows to delete (those of each run a purge dropped after ``position``)."""
        return [("execution_id", key) for key, at in sorted(self.dropped.items()) if at > position]

    def written(self) -> None:
        """Everything folded so far is written: the dropped runs need no deleting again."""
        self.dropped.clear()


def _row(run: AgentRun, position: int) -> Row:
    return (
        position,
        *(getattr(run, column) for column, _ in TABLE.columns[1:-1]),
        int(run.deleted),
    )


def _run(row: Row) -> AgentRun:
    values: dict[str, Any] = {column: row[i] for i, (column, _) in enumerate(TABLE.columns)}
    del values["position"]
    return AgentRun(**{**values, "deleted": bool(values["deleted"])})


class AgentRuns:
    """The agent-runs read model of one store: catch up, follow, query, rebuild.

    It loads the persisted runs when first used; queries answer from what was
    applied so far: call :meth:`catch_up` (or run :meth:`follow` in a thread)
    to bring the model up to the log.
    """

    def __init__(self, backend: Backend, *, batch: int = DEFAULT_BATCH) -> None:
        """The model of ``backend``'s log, applied ``batch`` events at a time."""
        if not isinstance(backend, Backend):
            raise UnsupportedBackendError(
                "the agent-runs read model needs an nenjim.infrastructure.storage.Backend, "
                f"got {type(backend).__name__}"
            )
        self.batch = arguments.page_limit(batch, "batch")
        self.backend = backend
        self._log = StorageLog(backend)
        self._store = projection_recorder(backend)
        self._lock = threading.RLock()
        self._fold: RunsFold | None = None
        self._written = 0

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply every final event after the position; how many events."""
        done = 0
        with self._lock:
            fold = self._opened()
            while events := self._log.read_after(fold.resume, self.batch):
                fold.apply(events)
                done += len(events)
                self._persist(fold)
                if progress is not None:
                    progress(f"catching up {NAME}", done, done)
        return done

    def sync(self, timeout: float = DEFAULT_SYNC_TIMEOUT) -> int:
        """Catch up until every event committed so far is applied; how many events.

        On PostgreSQL an event becomes final only once every transaction
        that started before it (anywhere on the server) has ended, so this
        waits for them, at most ``timeout`` seconds (then ``TimeoutError``).
        """
        deadline = time.monotonic() + arguments.seconds(timeout, "timeout")
        done = self.catch_up()
        pause = 0.002
        while self.pending():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{NAME}: events stayed behind a running transaction for over {timeout} s"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
            done += self.catch_up()
        return done

    def pending(self) -> bool:
        """Whether events were committed after the position (final or not yet)."""
        with self._lock:
            return self._log.pending_after(self._opened().resume)

    def position(self) -> int:
        """How many events of the log were applied."""
        with self._lock:
            return self._opened().position

    def rebuild(
        self, progress: Progress | None = None, *, timeout: float = DEFAULT_REBUILD_WAIT
    ) -> int:
        """Fold the log from its start into a new generation and swap it in; its event count.

        The new generation covers at least every event committed before the rebuild
        began. On PostgreSQL those are not all final while a transaction that started
        before them still runs (anywhere on the server): the rebuild waits for such
        transactions to end, at most ``timeout`` seconds, then raises
        ``RebuildTimeoutError`` and leaves the served generation as it was.
        """
        horizon = self._log.commit_horizon()
        total = self._log.size()
        fold = RunsFold()

        def batches() -> Iterator[Batch]:
            waited = False
            while True:
                while events := self._log.read_after(fold.resume, self.batch):
                    before = fold.position
                    fold.apply(events)
                    yield fold.rows_after(before), fold.position, fold.forgotten_after(before)
                    fold.written()
                    if progress is not None:
                        progress(f"rebuilding {NAME}", fold.position, max(total, fold.position))
                if waited:
                    return
                self._await_final(horizon, timeout, progress, fold.position, total)
                waited = True

        state = self._store.rebuild(TABLE, batches())
        with self._lock:
            self._fold, self._written = fold, state.position
        if progress is not None:
            progress(f"rebuilding {NAME}", fold.position, fold.position)
        return fold.position

    def follow(
        self,
        stop: threading.Event,
        *,
        poll_interval: float = follower.DEFAULT_POLL_INTERVAL,
        on_applied: Callable[[int], None] | None = None,
    ) -> None:
        """Keep caught up until ``stop`` is set: woken by commits on PostgreSQL, else polling."""
        if not isinstance(stop, threading.Event):
            raise TypeError(f"stop must be a threading.Event, got {type(stop).__name__}")
        arguments.seconds(poll_interval, "poll_interval")
        if on_applied is not None and not callable(on_applied):
            raise TypeError(f"on_applied must be callable or None, got {type(on_applied).__name__}")
        wakeup = follower.wakeup_for(self.backend, stop)
        try:
            follower.follow(self, wakeup, stop, poll_interval=poll_interval, on_applied=on_applied)
        finally:
            wakeup.close()

    def timeline(self, agent_id: str | None = None) -> tuple[AgentRun, ...]:
        """Every run (of ``agent_id``, if given) by Agent, start time and execution id."""
        arguments.optional_key(agent_id, "agent_id")
        with self._lock:
            runs = list(self._opened().runs.values())
        return timeline(run for run in runs if agent_id is None or run.agent_id == agent_id)

    def run(self, execution_id: str) -> AgentRun | None:
        """The run of ``execution_id``, or ``None``."""
        arguments.key(execution_id, "execution_id")
        with self._lock:
            return self._opened().runs.get(execution_id)

    def _opened(self) -> RunsFold:
        """The fold, loaded from the store on first use (dropping what earlier builds
        tracked: the fold starts again from the log instead)."""
        if self._fold is None:
            drop_legacy_projections(self.backend)
            persisted = self._store.load(TABLE)
            fold = RunsFold()
            fold.load(persisted.rows, persisted.position, self._log)
            self._fold, self._written = fold, persisted.position
        return self._fold

    def _persist(self, fold: RunsFold) -> None:
        if fold.position > self._written:
            self._store.write(
                TABLE, fold.rows_after, Tracking(NAME, fold.position), fold.forgotten_after
            )
            fold.written()
            self._written = fold.position

    def _await_final(
        self, horizon: int, timeout: float, progress: Progress | None, done: int, total: int
    ) -> None:
        """Wait until every event committed below ``horizon`` is final (see ``rebuild``)."""
        deadline = time.monotonic() + timeout
        pause = 0.002
        waiting = False
        while not self._log.is_final(horizon):
            if not waiting and progress is not None:
                progress(f"rebuilding {NAME}: waiting for older transactions", done, total)
            waiting = True
            if time.monotonic() > deadline:
                raise RebuildTimeoutError(
                    f"projection {NAME!r}: events committed before the rebuild began are not "
                    f"final after {timeout:g} s: a transaction that started before them still "
                    "runs on the server; the served generation is unchanged"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def agent_run_rows(backend: Backend) -> list[dict[str, Any]]:
    """The caught-up agent-runs read model as plain rows in a stable order (for comparisons)."""
    runs = AgentRuns(backend)
    runs.sync()
    return [asdict(run) for run in runs.timeline()]
