"""The agent-runs read model over a Persistence store: decode, persist, follow, query.

The fold is :mod:`nenjim.projections.agent_runs`; this module is its glue to the
storage log. It turns each ``agent.executions`` event of ``storage_events``
into the fold's plain events, keeps the runs in a table of the store (SQLite,
PostgreSQL) with the position in the same transaction
(:class:`~nenjim.infrastructure.store.tracking.TrackedProjection`), or in
process memory for ``memory:`` stores, whose log lives only as long as the
process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from nenjim.infrastructure.memory.storage import InMemoryDriver
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.catalog import EXECUTIONS
from nenjim.infrastructure.persistence.errors import UnsupportedBackendError
from nenjim.infrastructure.storage import Backend
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.follow.log import START, LogPosition, StoredEvent, pending_after
from nenjim.infrastructure.storage.sql.events import RECORD_DELETED, RECORD_WRITES
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store import follow as follower
from nenjim.infrastructure.store.tracking import (
    DEFAULT_BATCH,
    Progress,
    TrackedProjection,
    has_positions,
    live_generation,
    rows_table,
)
from nenjim.projections.agent_runs import (
    AgentRun,
    ExecutionDeleted,
    ExecutionSaved,
    RunEvent,
    fold,
    timeline,
)

DEFAULT_SYNC_TIMEOUT = 30.0
"""Seconds :meth:`AgentRuns.sync` waits for events to become final."""

NAME = "agent-runs"
"""The projection's name in statuses and on the command line."""

_COLUMNS = (
    "execution_id",
    "agent_id",
    "status",
    "phase",
    "started_at",
    "updated_at",
    "ended_at",
    "terminal_reason",
    "revisions",
    "deleted",
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


def run_events(events: Iterable[StoredEvent]) -> list[RunEvent]:
    """The fold's events among ``events``, in order."""
    return [found for event in events if (found := run_event(event)) is not None]


def _text(values: Mapping[str, Any], name: str, position: int) -> str:
    value = values.get(name)
    if not isinstance(value, str):
        raise SerializationError(f"storage event {position}: {name} is not text")
    return value


class AgentRunsTable:
    """The runs as rows of a SQL table, one per execution id."""

    name = NAME

    def create(self, session: Session, table: str) -> None:
        """The rows table and its index by Agent."""
        session.execute(
            f"CREATE TABLE {table} (execution_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, "
            "status TEXT NOT NULL, phase TEXT NOT NULL, started_at TEXT NOT NULL, "
            "updated_at TEXT NOT NULL, ended_at TEXT, terminal_reason TEXT, "
            "revisions INTEGER NOT NULL, deleted INTEGER NOT NULL)"
        )
        index = table.rsplit(".", 1)[-1].strip('"') + "_agent"
        session.execute(f"CREATE INDEX {index} ON {table} (agent_id)")

    def apply(self, session: Session, table: str, events: Sequence[StoredEvent]) -> None:
        """Fold the batch into the rows it touches, and write those back."""
        decoded = run_events(events)
        if not decoded:
            return
        ids = sorted({event.execution_id for event in decoded})
        stored = {run.execution_id: run for run in read_runs(session, table, ids)}
        folded = fold(stored, decoded)
        changed = [folded[key] for key in ids if key in folded and folded[key] != stored.get(key)]
        template = session.dialect.sql(
            f"INSERT INTO {table} ({', '.join(_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in _COLUMNS)}) ON CONFLICT (execution_id) DO UPDATE SET "
            + ", ".join(f"{column} = excluded.{column}" for column in _COLUMNS[1:])
        )
        session.connection.cursor().executemany(template, [_row(run) for run in changed])


def read_runs(
    session: Session,
    table: str,
    ids: Sequence[str] | None = None,
    *,
    agent_id: str | None = None,
) -> list[AgentRun]:
    """The stored runs (of ``ids`` only, or of ``agent_id`` only, if given)."""
    query = f"SELECT {', '.join(_COLUMNS)} FROM {table}"
    if ids is None:
        rows = session.all(
            query if agent_id is None else query + " WHERE agent_id = ?",
            () if agent_id is None else (agent_id,),
        )
    else:
        rows = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            where = f" WHERE execution_id IN ({', '.join('?' for _ in chunk)})"
            rows.extend(session.all(query + where, chunk))
    return [_run(row) for row in rows]


def _row(run: AgentRun) -> tuple[Any, ...]:
    return (*(getattr(run, column) for column in _COLUMNS[:-1]), int(run.deleted))


def _run(row: Sequence[Any]) -> AgentRun:
    values = dict(zip(_COLUMNS, row, strict=True))
    return AgentRun(**{**values, "deleted": bool(values["deleted"])})


class _MemoryRuns:
    """The runs of a ``memory:`` store, folded in process from its in-memory log."""

    def __init__(self, driver: InMemoryDriver, batch: int) -> None:
        self._driver = driver
        self._batch = batch
        self._lock = threading.Lock()
        self.runs: dict[str, AgentRun] = {}
        self.position = 0

    def catch_up(self, progress: Progress | None = None) -> int:
        done = 0
        with self._lock:
            while page := self._driver.log_after(self.position, self._batch):
                events = [
                    StoredEvent(LogPosition(0, number), topic, state)
                    for number, topic, state in page
                ]
                self.runs = fold(self.runs, run_events(events))
                self.position = page[-1][0]
                done += len(page)
                if progress is not None:
                    progress(f"catching up {NAME}", done, done)
        return done

    def reset(self) -> None:
        with self._lock:
            self.runs, self.position = {}, 0


class AgentRuns:
    """The agent-runs read model of one store: catch up, follow, query, rebuild.

    Queries answer from what was applied so far: call :meth:`catch_up` (or
    run :meth:`follow` in a thread) to bring the model up to the log.
    """

    def __init__(self, backend: Backend, *, batch: int = DEFAULT_BATCH) -> None:
        """The model of ``backend``'s log, applied ``batch`` events at a time."""
        if not isinstance(backend, Backend):
            raise UnsupportedBackendError(
                "the agent-runs read model needs an nenjim.infrastructure.storage.Backend, "
                f"got {type(backend).__name__}"
            )
        batch = arguments.page_limit(batch, "batch")
        self.backend = backend
        driver = backend.driver
        self._memory = _MemoryRuns(driver, batch) if isinstance(driver, InMemoryDriver) else None
        self._tracked = (
            None if self._memory else TrackedProjection(backend, AgentRunsTable(), batch=batch)
        )

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply every final event after the position; how many events."""
        if self._memory is not None:
            return self._memory.catch_up(progress)
        assert self._tracked is not None
        return self._tracked.catch_up(progress)

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
        if self._memory is not None:
            return self._memory.position < self._memory_length()
        assert self._tracked is not None
        with self._tracked.transaction() as session:
            return pending_after(session, self._tracked.live(session).position)

    def position(self) -> LogPosition:
        """The position of the last event applied."""
        if self._memory is not None:
            return LogPosition(0, self._memory.position)
        with self._read() as session:
            live = None if session is None else live_generation(session, NAME)
            return START if live is None else live.position

    def rebuild(self, progress: Progress | None = None) -> int:
        """Rebuild from the start of the log and swap the result in; how many events."""
        if self._memory is not None:
            self._memory.reset()
            return self._memory.catch_up(progress)
        assert self._tracked is not None
        return self._tracked.rebuild(progress)

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
        if self._memory is not None:
            runs: Iterable[AgentRun] = self._memory.runs.values()
            return timeline(run for run in runs if agent_id is None or run.agent_id == agent_id)
        with self._read() as session:
            return timeline(self._stored(session, agent_id=agent_id))

    def run(self, execution_id: str) -> AgentRun | None:
        """The run of ``execution_id``, or ``None``."""
        arguments.key(execution_id, "execution_id")
        if self._memory is not None:
            return self._memory.runs.get(execution_id)
        with self._read() as session:
            found = self._stored(session, ids=[execution_id])
        return found[0] if found else None

    def _memory_length(self) -> int:
        assert isinstance(self.backend.driver, InMemoryDriver)
        return self.backend.driver.log_length()

    def _stored(
        self,
        session: Session | None,
        *,
        ids: Sequence[str] | None = None,
        agent_id: str | None = None,
    ) -> list[AgentRun]:
        live = None if session is None else live_generation(session, NAME)
        if session is None or live is None:
            return []
        return read_runs(session, rows_table(session, NAME, live.number), ids, agent_id=agent_id)

    @contextmanager
    def _read(self) -> Iterator[Session | None]:
        """One transaction holding the projection's lock (a rebuild cannot swap meanwhile);
        ``None`` when nothing was ever tracked in the store."""
        assert self._tracked is not None
        with self._tracked.transaction() as session:
            yield session if has_positions(session) else None


def agent_run_rows(backend: Backend) -> list[dict[str, Any]]:
    """The caught-up agent-runs read model as plain rows in a stable order (for comparisons)."""
    runs = AgentRuns(backend)
    runs.sync()
    return [asdict(run) for run in runs.timeline()]
