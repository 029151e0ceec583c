"""Projections in an SQL store, written once: a kind gives only its SQL spelling.

:class:`SqlProjectionRecorder` keeps the tracking rows and the generation
tables of :mod:`nenjim.infrastructure.tracking.projections` in a database
reached through :class:`Transactions`. A kind gives its placeholder, its
column types and tracking table DDL, how it names a table, lists its
tables, inserts rows in bulk, and the cursor of a read (one snapshot) or of
a write (holding the kind's write lock, so writers take turns).
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from eventsourcing.persistence import IntegrityError, Tracking

from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.store.errors import ProjectionDamagedError, RebuildLostError
from nenjim.infrastructure.tracking.projections import (
    TRACKING_TABLE,
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


class Transactions(Protocol):
    """How a recorder reaches its store: a database connection inside a transaction."""

    def reading(self) -> AbstractContextManager[Any]:
        """A connection in a transaction that is rolled back at the end."""
        ...

    def writing(self) -> AbstractContextManager[Any]:
        """A connection in a transaction committed at the end (rolled back on an error);
        on SQLite it holds the write lock from its start."""
        ...


class SessionTransactions:
    """The transactions of a storage backend's SQL driver (a connection of its pool each;
    on SQLite each holds the write lock, as every transaction of the driver does)."""

    def __init__(self, backend: Backend) -> None:
        self._driver = cast(SqlDriver, backend.driver)

    @contextmanager
    def reading(self) -> Iterator[Any]:
        with self._driver.transaction(None) as session:
            yield session.connection

    writing = reading


class LogTransactions:
    """The transactions of a Journal log's datastore (each kind's ``reading`` and
    ``writing``), refused once the log is closed."""

    def __init__(self, log: LogApplication) -> None:
        self.datastore: Any = cast(Any, log.factory).datastore
        self._log = cast(ClosableRecorder, log.recorder)


class Cursor(Protocol):
    """What a recorder asks of a database cursor that fetches plain tuples."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> object: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


C = TypeVar("C", bound=Cursor)


class SqlProjectionRecorder(ProjectionRecorder, Generic[C]):
    """The projections of one SQL store reached through ``transactions``; a subclass gives
    the SQL spelling of its database (its class attributes and its ``_`` methods)."""

    mark: ClassVar[str]
    """The placeholder of a query parameter."""
    types: ClassVar[Mapping[str, str]]
    """The DDL of a column of each :class:`ProjectionTable` type, and of the key (``key``)."""
    quote: ClassVar[str]
    """What a statement writes around a column's name (a checked ASCII identifier)."""
    tracking_ddl: ClassVar[str]
    """``CREATE TABLE IF NOT EXISTS`` of the tracking table, ``{}`` standing for its name."""
    code_points: ClassVar[str] = ""
    """What follows a text column that indexes and queries compare in code point order."""
    duplicate_errors: ClassVar[tuple[type[Exception], ...]]
    """The driver's errors for a unique index that the rows already break."""

    def __init__(self, transactions: Transactions) -> None:
        self._transactions = transactions
        self._present: set[str] = set()  # tables found in the store by a select
        self._tracking = self._name(TRACKING_TABLE)
        self._select = f"SELECT name, position, version, generation FROM {self._tracking}"

    def states(self) -> list[ProjectionState]:
        with self._reading() as c:
            if not self._has(c, TRACKING_TABLE):
                return []
            c.execute(f"{self._select} ORDER BY name")
            return [_tracked(row) for row in c.fetchall()]

    def load(self, table: ProjectionTable) -> Persisted:
        with self._reading() as c:
            state = self._state(c, table.name) if self._has(c, TRACKING_TABLE) else None
            if state is None or state.version != table.version:
                return Persisted(0, [])
            name = table.generation_table(state.generation)
            self._check_present(c, table, state)
            c.execute(f"SELECT {self._columns(table)} FROM {self._name(name)} ORDER BY position")
            rows: list[Row] = c.fetchall()
        # Rows past the tracked position were written by nobody: a lowered position, or
        # rows added by hand.
        last = rows[-1][0] if rows else 0
        if type(last) is not int or last > state.position:
            raise ProjectionDamagedError(
                f"projection {table.name}: {name} holds a row at position {last!r}, past the "
                f"position {state.position} that {TRACKING_TABLE} tracks"
            )
        return Persisted(state.position, rows)

    def select(self, table: ProjectionTable, query: RowQuery) -> list[Row]:
        table.check_columns(query.named_columns())
        with self._reading() as c:
            state = self._state(c, table.name) if self._seen(c, TRACKING_TABLE) else None
            if state is None or state.version != table.version:
                return []
            name = table.generation_table(state.generation)
            if not self._seen(c, name):
                raise ProjectionDamagedError(
                    f"projection {table.name}: {TRACKING_TABLE} tracks generation "
                    f"{state.generation}, but its table {name} is missing"
                )
            statement, values = self._selection(table, query)
            c.execute(statement.format(table=self._name(name)), values)
            return cast(list[Row], c.fetchall())

    def ensure_indexes(self, table: ProjectionTable, *, create: bool = True) -> bool:
        with self._reading() as c:
            state = self._state(c, table.name) if self._has(c, TRACKING_TABLE) else None
            if state is None or state.version != table.version:
                return False
            self._check_present(c, table, state)
            missing = [
                i for i in range(len(table.unique)) if not self._has_index(c, table, state, i)
            ]
            if not create:
                for number in missing:
                    self._check_unique(c, table, state.generation, number)
        if not missing or not create:
            return False
        duplicates: tuple[type[Exception], ...] = (IntegrityError, *self.duplicate_errors)
        try:
            with self._writing() as c:
                now = self._state(c, table.name)
                if now is None or now.generation != state.generation:
                    return False  # a rebuild swapped in a generation made with its indexes
                self._index(c, table, state.generation, missing)
        except duplicates:
            # Rows no write leaves (a write checks each key): say which, not the driver's words.
            with self._reading() as c:
                for number in missing:
                    self._check_unique(c, table, state.generation, number)
            raise
        return True

    def _check_present(self, c: C, table: ProjectionTable, state: ProjectionState) -> None:
        """``ProjectionDamagedError`` unless the table of the tracked generation exists."""
        name = table.generation_table(state.generation)
        if not self._has(c, name):
            raise ProjectionDamagedError(
                f"projection {table.name}: {TRACKING_TABLE} tracks generation "
                f"{state.generation} at position {state.position}, but its table {name} "
                "is missing"
            )

    def _check_unique(self, c: C, table: ProjectionTable, generation: int, number: int) -> None:
        """``ProjectionDamagedError`` naming a key that two rows of ``generation`` share in
        the columns of the unique index ``number`` (a table its index was dropped from)."""
        columns = table.unique[number]
        quoted = ", ".join(f"{self.quote}{column}{self.quote}" for column in columns)
        name = table.generation_table(generation)
        c.execute(
            f"SELECT {quoted} FROM {self._name(name)} GROUP BY {quoted} HAVING count(*) > 1 LIMIT 1"
        )
        repeated = c.fetchone()
        if repeated is not None:
            raise ProjectionDamagedError(
                f"projection {table.name}: {name} holds more than one row of "
                f"({', '.join(columns)}) = {tuple(repeated)!r}, which no write leaves"
            )

    def write(
        self,
        table: ProjectionTable,
        rows_after: RowsAfter,
        tracking: Tracking,
        forget_after: ForgetAfter | None = None,
    ) -> bool:
        position = checked_position(table, tracking)
        with self._writing() as c:
            state = self._state(c, table.name)
            if state is not None and state.version > table.version:
                return False
            if state is None or state.version < table.version:
                generation = self._create(c, table, state)
                self._insert(c, table, generation, rows_after(0))
                state = ProjectionState(table.name, position, table.version, generation)
                self._swap(c, table, state)
                return True
            if state.position >= position:
                return False
            if forget_after is not None:
                self._forget(c, table, state.generation, forget_after(state.position))
            self._insert(c, table, state.generation, rows_after(state.position))
            c.execute(
                f"UPDATE {self._tracking} SET position = {self.mark} WHERE name = {self.mark}",
                (position, table.name),
            )
            return True

    def rebuild(self, table: ProjectionTable, batches: Iterable[Batch]) -> ProjectionState:
        with self._writing() as c:
            # Its indexes come after its rows: one sort, not an insert into them per row.
            generation = self._create(c, table, self._replaced_state(c, table.name), indexed=False)
        position = 0
        for batch in batches:
            rows, after, forgotten = batch_parts(batch)
            with self._writing() as c:
                self._forget(c, table, generation, forgotten)
                self._insert(c, table, generation, rows)
            position = after
        state = ProjectionState(table.name, position, table.version, generation)
        with self._writing() as c:
            self._index(c, table, generation, range(len(table.unique)))
            now = self._replaced_state(c, table.name)
            if now is not None and now.generation >= generation:
                raise RebuildLostError(
                    f"projection {table.name}: another rebuild swapped in generation "
                    f"{now.generation} first; nothing of this one was kept"
                )
            self._swap(c, table, state)
        return state

    @abstractmethod
    def _cursor(self, connection: Any, write: bool) -> AbstractContextManager[C]:
        """A cursor of plain tuples on ``connection`` in its transaction: a load reads
        10,000s of rows, and a row object each would be built only to be copied. A read's
        sees one snapshot; a write's holds the lock that makes projection writers take turns."""

    @abstractmethod
    def _tables(self, c: C, prefix: str) -> list[str]:
        """The names of the store's tables that start with ``prefix``."""

    @abstractmethod
    def _insert(self, c: C, table: ProjectionTable, generation: int, rows: Iterable[Row]) -> None:
        """Insert ``rows`` into the table of ``generation``."""

    def _forget(
        self, c: C, table: ProjectionTable, generation: int, forgotten: Iterable[Forget]
    ) -> None:
        """Delete the rows of ``generation`` that ``forgotten`` names."""
        name = self._name(table.generation_table(generation))
        for column, value in forgotten_columns(table, forgotten):
            c.execute(
                f"DELETE FROM {name} WHERE {self.quote}{column}{self.quote} = {self.mark}",
                (value,),
            )

    def _seen(self, c: C, table: str) -> bool:
        """:meth:`_has`, asked of the store only until it answered yes: a select is a
        query's hot path, and a table the tracking row names is dropped only two swaps
        after it stopped being named (a reader reads the tracking row first)."""
        if table in self._present:
            return True
        if not self._has(c, table):
            return False
        self._present.add(table)
        return True

    def _name(self, table: str) -> str:
        """``table`` as a statement names it (in the kind's schema, if it has one)."""
        return table

    def _has(self, c: C, table: str) -> bool:
        """Whether the store holds ``table``."""
        return table in self._tables(c, table)

    @contextmanager
    def _reading(self) -> Iterator[C]:
        with self._transactions.reading() as connection, self._cursor(connection, write=False) as c:
            yield c

    @contextmanager
    def _writing(self) -> Iterator[C]:
        with self._transactions.writing() as connection, self._cursor(connection, write=True) as c:
            c.execute(self.tracking_ddl.format(self._tracking))
            yield c

    def _columns(self, table: ProjectionTable) -> str:
        return ", ".join(f"{self.quote}{column}{self.quote}" for column, _ in table.columns)

    def _state(self, c: C, name: str) -> ProjectionState | None:
        c.execute(f"{self._select} WHERE name = {self.mark}", (name,))
        row = c.fetchone()
        return None if row is None else _tracked(row)

    def _replaced_state(self, c: C, name: str) -> ProjectionState | None:
        """The tracking row a rebuild replaces; one edited into another type counts as none
        (the rebuild writes it anew)."""
        try:
            return self._state(c, name)
        except ProjectionDamagedError:
            return None

    def _create(
        self, c: C, table: ProjectionTable, state: ProjectionState | None, *, indexed: bool = True
    ) -> int:
        """Create a table for a generation that no table has, past ``state``'s and every one
        in the store, with its indexes if ``indexed``, and answer it.

        A table above the served generation belongs to another rebuild, still
        filling or killed. Its number is never reused, since two rebuilds would
        then fill one table; the next swap drops what is left of it.
        """
        generation = max([0 if state is None else state.generation, *self._generations(c, table)])
        name = self._name(table.generation_table(generation + 1))
        columns = ", ".join(
            f"{self.quote}{column}{self.quote} {self.types['key' if i == 0 else kind]}"
            for i, (column, kind) in enumerate(table.columns)
        )
        c.execute(f"CREATE TABLE {name} ({columns})")
        if indexed:
            self._index(c, table, generation + 1, range(len(table.unique)))
        return generation + 1

    def _index(self, c: C, table: ProjectionTable, generation: int, numbers: Iterable[int]) -> None:
        """Create the unique indexes ``numbers`` of ``generation``'s table."""
        for number in numbers:
            columns = ", ".join(self._ref(table, column) for column in table.unique[number])
            index = self._quoted(table.index_name(generation, number))
            c.execute(
                f"CREATE UNIQUE INDEX IF NOT EXISTS {index} "
                f"ON {self._name(table.generation_table(generation))} ({columns})"
            )

    @abstractmethod
    def _has_index(self, c: C, table: ProjectionTable, state: ProjectionState, number: int) -> bool:
        """Whether the served generation's table has its unique index ``number``."""

    def _quoted(self, index: str) -> str:
        """An index's name as ``CREATE INDEX`` names it (no schema: it is its table's)."""
        return index

    def _ref(self, table: ProjectionTable, column: str) -> str:
        """``column`` as a comparison or an order names it (text in code point order)."""
        kind = dict(table.columns)[column]
        quoted = f"{self.quote}{column}{self.quote}"
        return quoted if kind == "integer" else f"{quoted}{self.code_points}"

    def _selection(self, table: ProjectionTable, query: RowQuery) -> tuple[str, list[Any]]:
        """The ``SELECT`` of ``query`` (``{table}`` standing for its table) and its values."""
        ref = functools.partial(self._ref, table)
        wanted = query.columns or tuple(name for name, _ in table.columns)
        quoted = ", ".join(ref(column) for column in wanted)  # as DISTINCT orders them
        conditions = [f"{ref(column)} = {self.mark}" for column, _ in query.equal]
        values: list[Any] = [value for _, value in query.equal]
        for column, comparison, value in query.bounds:
            conditions.append(f"{ref(column)} {_COMPARISONS[comparison]} {self.mark}")
            values.append(value)
        if query.any_of is not None:
            column, among = query.any_of
            marks = ", ".join([self.mark] * len(among))
            conditions.append(f"{ref(column)} IN ({marks})" if among else "1 = 0")
            values.extend(among)
        statement = f"SELECT {'DISTINCT ' if query.distinct else ''}{quoted} FROM {{table}}"
        if conditions:
            statement += " WHERE " + " AND ".join(conditions)
        if query.order:
            way = " DESC" if query.descending else ""
            statement += " ORDER BY " + ", ".join(f"{ref(column)}{way}" for column in query.order)
        if query.limit is not None:
            statement += f" LIMIT {int(query.limit)}"
        return statement, values

    def _swap(self, c: C, table: ProjectionTable, state: ProjectionState) -> None:
        """Point the tracking row at ``state``'s generation; drop all but it and the one before.

        The one before stays: a reader that read the tracking row just before
        this commit still reads its rows.
        """
        marks = ", ".join([self.mark] * 4)
        c.execute(
            f"INSERT INTO {self._tracking} VALUES ({marks}) ON CONFLICT (name) DO UPDATE SET "
            "version = excluded.version, generation = excluded.generation, "
            "position = excluded.position",
            (state.name, state.version, state.generation, state.position),
        )
        for generation in self._generations(c, table):
            if generation < state.generation - 1:
                c.execute(f"DROP TABLE {self._name(table.generation_table(generation))}")

    def _generations(self, c: C, table: ProjectionTable) -> list[int]:
        prefix = f"{table.table}_g"
        suffixes = (name[len(prefix) :] for name in self._tables(c, prefix))
        return [int(suffix) for suffix in suffixes if suffix.isdigit()]


# The comparisons a query may make, as SQL spells them (never the caller's text).
_COMPARISONS = {"<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _tracked(row: Sequence[Any]) -> ProjectionState:
    """The tracking row ``(name, position, version, generation)``; ``ProjectionDamagedError``
    unless each number is an integer (a type the database does not enforce, as SQLite's,
    can be edited)."""
    name, *numbers = row
    if not all(type(number) is int for number in numbers):
        raise ProjectionDamagedError(
            f"projection {name}: its tracking row in {TRACKING_TABLE} holds {tuple(numbers)!r} "
            "for (position, version, generation), not integers"
        )
    return ProjectionState(str(name), *numbers)
