"""The projections of a ``memory:`` store: in its process, beside its log."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from eventsourcing.persistence import Tracking

from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.tracking.projections import (
    Batch,
    Forget,
    ForgetAfter,
    Persisted,
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
    RowsAfter,
    batch_parts,
    checked_position,
    forgotten_columns,
)

if TYPE_CHECKING:
    from nenjim.infrastructure.log.application import LogApplication


class MemoryProjectionRecorder(ProjectionRecorder):
    """The projections of a ``memory:`` log: in this process, under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, ProjectionState] = {}
        self._rows: dict[str, list[Row]] = {}

    def states(self) -> list[ProjectionState]:
        with self._lock:
            return [self._states[name] for name in sorted(self._states)]

    def load(self, table: ProjectionTable) -> Persisted:
        with self._lock:
            state = self._states.get(table.name)
            if state is None or state.version != table.version:
                return Persisted(0, [])
            return Persisted(state.position, list(self._rows[table.name]))

    def rows_after(
        self, table: ProjectionTable, state: ProjectionState, after: int, limit: int
    ) -> list[Row]:
        with self._lock:
            rows = self._rows.get(table.name, [])
            # Positions ascend, and nothing edits a memory store's rows by hand.
            start = bisect.bisect_right(rows, after, key=_position)
            return rows[start : start + limit]

    def write(
        self,
        table: ProjectionTable,
        rows_after: RowsAfter,
        tracking: Tracking,
        forget_after: ForgetAfter | None = None,
    ) -> bool:
        position = checked_position(table, tracking)
        with self._lock:
            state = self._states.get(table.name)
            if state is not None and state.version > table.version:
                return False
            if state is None or state.version < table.version:
                generation = 1 if state is None else state.generation + 1
                rows = list(rows_after(0))
            elif state.position >= position:
                return False
            else:
                generation = state.generation
                rows = self._rows[table.name]
                if forget_after is not None:
                    rows = _without(table, rows, forget_after(state.position))
                rows = rows + list(rows_after(state.position))
            self._rows[table.name] = rows
            self._states[table.name] = ProjectionState(
                table.name, position, table.version, generation
            )
            return True

    def rebuild(self, table: ProjectionTable, batches: Iterable[Batch]) -> ProjectionState:
        rows: list[Row] = []
        position = 0
        for batch in batches:
            added, after, forgotten = batch_parts(batch)
            rows = _without(table, rows, forgotten)
            rows.extend(added)
            position = after
        with self._lock:
            old = self._states.get(table.name)
            state = ProjectionState(
                table.name, position, table.version, 1 if old is None else old.generation + 1
            )
            self._rows[table.name] = rows
            self._states[table.name] = state
            return state


def _without(table: ProjectionTable, rows: list[Row], forgotten: Iterable[Forget]) -> list[Row]:
    """``rows`` but those ``forgotten`` names."""
    columns = [name for name, _ in table.columns]
    for column, value in forgotten_columns(table, forgotten):
        index = columns.index(column)
        rows = [row for row in rows if row[index] != value]
    return rows


_MEMORY: WeakKeyDictionary[object, MemoryProjectionRecorder] = WeakKeyDictionary()
_MEMORY_LOCK = threading.Lock()


def recorder_for(log: LogApplication | Backend) -> MemoryProjectionRecorder:
    """The in-memory projections that belong to ``log`` (an in-memory Journal log's
    application or storage backend): kept as long as its recorder or driver lives."""
    owner = log.driver if isinstance(log, Backend) else log.recorder
    with _MEMORY_LOCK:
        found = _MEMORY.get(owner)
        if found is None:
            found = _MEMORY[owner] = MemoryProjectionRecorder()
        return found


def _position(row: Row) -> int:
    position = row[0]
    assert isinstance(position, int)
    return position
