"""The projections of a ``memory:`` store: in its process, beside its log."""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
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
    RowQuery,
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

    def select(self, table: ProjectionTable, query: RowQuery) -> list[Row]:
        table.check_columns(query.named_columns())
        return select_rows(table, self.load(table).rows, query)

    def ensure_indexes(self, table: ProjectionTable, *, create: bool = True) -> bool:
        return False  # a list filtered on each read: nothing to index

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


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def select_rows(table: ProjectionTable, rows: list[Row], query: RowQuery) -> list[Row]:
    """What an SQL store answers ``query`` with, from ``rows`` (in position order)."""
    index = {name: i for i, (name, _) in enumerate(table.columns)}
    tests = [(index[c], operator.eq, v) for c, v in query.equal]
    tests += [(index[c], _COMPARE[how], v) for c, how, v in query.bounds]
    found = [row for row in rows if all(test(row[i], v) for i, test, v in tests)]
    if query.any_of is not None:
        column, among = index[query.any_of[0]], set(query.any_of[1])
        found = [row for row in found if row[column] in among]
    if query.order:
        keys = [index[c] for c in query.order]
        found.sort(key=lambda row: tuple(row[i] for i in keys), reverse=query.descending)
    wanted = [index[c] for c in query.columns or [name for name, _ in table.columns]]
    picked = [tuple(row[i] for i in wanted) for row in found]
    if query.distinct:
        picked = list(dict.fromkeys(picked))
    return picked if query.limit is None else picked[: query.limit]


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
