"""Persisted projections of either log: a read model's rows and its position, in the store.

A projection folds a log's events, in log order, into rows of a table it
declares (:class:`ProjectionTable`); nothing here knows what the rows mean,
nor which log they come from. Its position counts the events of its log it
applied: the id of the last notification on the Journal log (gap-free), the
number of events up to the last one in log order on the storage log (see
:mod:`nenjim.infrastructure.storage.follow.log`). Every projection of a
store, whichever log it follows, keeps one tracking row (its position, the
version of its fold and the generation of its table) in the one table
``nenjim_projections``, and its rows in ``<table>_g<generation>``, both in
the store (the SQLite file, the PostgreSQL schema, or for ``memory:`` this
process).

Rows and position move together: :meth:`ProjectionRecorder.write` inserts
the rows after the stored position and moves the position in ONE
transaction, so a crash leaves both before or both after, and a restart
resumes from the position. This is ``eventsourcing``'s tracking record
(:class:`~eventsourcing.persistence.Tracking`: a name and a notification id,
written atomically with the state it guards), with two additions a
``TrackingRecorder`` lacks: the version of the fold, and the generation of
the table that a rebuild swaps.

:meth:`ProjectionRecorder.rebuild` fills a fresh generation of the table
and swaps it in with the tracking row in one transaction; readers, which
read the tracking row and the rows in one transaction, see the old
generation or the new one, never a half-built one.

The rows of a projection are appended, never updated: each row carries the
position of the event that produced it (its first column, ``position``).
They are deleted only when the fold forgets what it built from a key (a
purge of the log erased the key's events): a write or a rebuild batch may
name ``(column, value)`` pairs whose rows it deletes, before it inserts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

from eventsourcing.persistence import Tracking

from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.store.kinds import StoreKind, store_kind
from nenjim.infrastructure.store.progress import Progress

if TYPE_CHECKING:
    from nenjim.infrastructure.log.application import LogApplication

TRACKING_TABLE = "nenjim_projections"
Row: TypeAlias = tuple[int | str | None, ...]
"""One row of a projection table, its values in the order of the table's columns."""
_TYPES = frozenset({"integer", "text", "optional text"})


@dataclass(frozen=True, slots=True)
class ProjectionTable:
    """What a projection persists: its name, its table, its columns and its fold's version.

    ``columns`` are ``(name, type)`` pairs, ``type`` ``integer``, ``text``
    or ``optional text`` (text or ``NULL``); the first is ``("position",
    "integer")``, the primary key: the position of the event that produced
    the row. ``version`` is the
    version of the fold: rows stored by another version are not read, and
    the next write replaces them by a full generation of this version's
    rows. ``unique`` names column lists whose values no two rows share;
    each is a unique index of the table, which :meth:`ProjectionRecorder.select`
    uses to find rows by them (or by a first part of them), in their order.
    """

    name: str
    table: str
    columns: tuple[tuple[str, str], ...]
    version: int = 1
    unique: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.columns or self.columns[0] != ("position", "integer"):
            raise ValueError(f"projection {self.name}: the first column is ('position', 'integer')")
        unknown = [kind for _, kind in self.columns if kind not in _TYPES]
        if unknown:
            raise ValueError(f"projection {self.name}: column types {unknown} are not {_TYPES}")
        for identifier in (self.table, *(name for name, _ in self.columns)):
            if not identifier.isidentifier() or not identifier.isascii():
                raise ValueError(f"projection {self.name}: {identifier!r} is not an identifier")
        names = {name for name, _ in self.columns}
        for columns in self.unique:
            if not columns or not set(columns) <= names:
                raise ValueError(f"projection {self.name}: unique {columns} names no columns")

    def generation_table(self, generation: int) -> str:
        """The table holding the rows of ``generation``."""
        return f"{self.table}_g{generation}"

    def index_name(self, generation: int, number: int) -> str:
        """The name of the unique index ``number`` (of :attr:`unique`) of ``generation``."""
        return f"{self.table}_g{generation}_u{number}"

    def check_columns(self, columns: Iterable[str]) -> None:
        """Raise ``ValueError`` unless every one of ``columns`` is one of the table's."""
        names = {name for name, _ in self.columns}
        unknown = [column for column in columns if column not in names]
        if unknown:
            raise ValueError(f"projection {self.name}: no columns {unknown}")


Comparison = Literal["<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class RowQuery:
    """Which rows of a projection table :meth:`ProjectionRecorder.select` reads.

    The rows whose ``equal`` columns hold the given values, whose ``any_of``
    column holds one of its values, and that pass every ``(column, comparison,
    value)`` of ``bounds``; only the ``columns`` named (all if empty), ordered
    by ``order`` (descending if ``descending``; text in code point order),
    each distinct one once if ``distinct``, at most ``limit`` of them.
    Columns are checked against the table's.
    """

    columns: tuple[str, ...] = ()
    equal: tuple[tuple[str, int | str], ...] = ()
    any_of: tuple[str, tuple[int | str, ...]] | None = None
    bounds: tuple[tuple[str, Comparison, int | str], ...] = ()
    order: tuple[str, ...] = ()
    descending: bool = False
    distinct: bool = False
    limit: int | None = None

    def named_columns(self) -> list[str]:
        """Every column the query names."""
        named = [*self.columns, *(c for c, _ in self.equal), *(c for c, _, _ in self.bounds)]
        return [*named, *self.order, *([] if self.any_of is None else [self.any_of[0]])]


@dataclass(frozen=True, slots=True)
class ProjectionState:
    """A projection's tracking row: its position, fold version and table generation."""

    name: str
    position: int
    version: int
    generation: int


@dataclass(frozen=True, slots=True)
class Persisted:
    """What a reader loads: the rows up to ``position`` (all rows of one generation)."""

    position: int
    rows: list[Row]


@dataclass(frozen=True, slots=True)
class ProjectionStatus:
    """Where one projection stands against its log: ``position`` events applied of the
    ``head`` the log holds, ``lag`` committed events not applied yet."""

    name: str
    log: str
    position: int
    head: int
    lag: int


@dataclass(frozen=True, slots=True)
class MaintainedProjection:
    """A persisted projection as ``nenjim projections`` maintains it, whichever its log.

    ``status(url)`` reports where it stands in the store ``url``
    (``StoreUnavailableError`` when the store holds no such log; nothing is
    created); ``rebuild(url, progress)`` folds its whole log into a fresh
    generation, swaps it in and answers one summary line.
    """

    name: str
    status: Callable[[str], ProjectionStatus]
    rebuild: Callable[[str, Progress], str]


RowsAfter = Callable[[int], Iterable[Row]]
"""The rows a writer holds after a position (the store's, read inside its transaction)."""

Forget = tuple[str, int | str]
"""``(column, value)``: every row holding ``value`` in ``column`` is deleted."""

ForgetAfter = Callable[[int], Iterable[Forget]]
"""What a writer forgot after a position: the rows to delete before inserting its own."""

Batch = tuple[Sequence[Row], int] | tuple[Sequence[Row], int, Sequence[Forget]]
"""One batch of a rebuild: its rows, the position after them and, optionally, what it forgot
(deleted from the new generation before the rows are inserted)."""


def batch_parts(batch: Batch) -> tuple[Sequence[Row], int, Sequence[Forget]]:
    """A rebuild batch's rows, position and forgotten rows (none if it names none)."""
    return (batch[0], batch[1], batch[2]) if len(batch) == 3 else (batch[0], batch[1], ())


def forgotten_columns(table: ProjectionTable, forgotten: Iterable[Forget]) -> list[Forget]:
    """``forgotten``, each column checked to be one of ``table``'s."""
    names = {name for name, _ in table.columns}
    checked = list(forgotten)
    for column, _ in checked:
        if column not in names:
            raise ValueError(f"projection {table.name}: no column {column!r} to forget rows by")
    return checked


class ProjectionRecorder(ABC):
    """Tracking rows and projection tables in one store (see the module notes)."""

    @abstractmethod
    def states(self) -> list[ProjectionState]:
        """Every tracking row, by name; ``[]`` when the store holds none (nothing is created)."""

    def state(self, name: str) -> ProjectionState | None:
        """The tracking row of ``name``, or ``None``."""
        return next((s for s in self.states() if s.name == name), None)

    @abstractmethod
    def load(self, table: ProjectionTable) -> Persisted:
        """The position and every row, from one consistent read; position 0 and no rows when
        nothing of this fold's version is stored. ``ProjectionDamagedError`` for a tracking
        row or table edited so that it cannot be what a write left (a number that is not
        an integer, a row past the position, a missing table)."""

    @abstractmethod
    def select(self, table: ProjectionTable, query: RowQuery) -> list[Row]:
        """The rows ``query`` names, from one consistent read of the generation served now;
        ``[]`` when nothing of this fold's version is stored. ``ProjectionDamagedError``
        for a missing table, as :meth:`load`."""

    @abstractmethod
    def ensure_indexes(self, table: ProjectionTable, *, create: bool = True) -> bool:
        """Create the unique indexes (:attr:`ProjectionTable.unique`) the served generation
        lacks (a table written before they were declared); whether any was. A store that
        holds every one is only read. ``ProjectionDamagedError`` naming a key that two rows
        share (rows no write leaves), whether or not ``create`` (a reader that may not write
        only checks the rows of the indexes it lacks)."""

    @abstractmethod
    def write(
        self,
        table: ProjectionTable,
        rows_after: RowsAfter,
        tracking: Tracking,
        forget_after: ForgetAfter | None = None,
    ) -> bool:
        """Move the projection to ``tracking.notification_id``: in one transaction, read the
        stored position ``p`` (locking it), delete the rows ``forget_after(p)`` names, insert
        ``rows_after(p)`` and store the new one.

        ``tracking.application_name`` is the projection's name.

        Nothing is written (``False``) when the stored position is already at
        or beyond the new one (another process got there first), or when the
        stored rows belong to a newer version of the fold. Rows stored by an
        older version are replaced by ``rows_after(0)`` in a new generation.
        """

    @abstractmethod
    def rebuild(self, table: ProjectionTable, batches: Iterable[Batch]) -> ProjectionState:
        """Fill a fresh generation from ``batches`` (rows, position after them, optionally the
        rows to forget first: :data:`Batch`) and swap it in.

        Each batch commits on its own into the new table, which no reader
        reads; the swap (tracking row, old table dropped) is one transaction.
        """


def checked_position(table: ProjectionTable, tracking: Tracking) -> int:
    """The position ``tracking`` moves ``table``'s projection to (it must name it)."""
    if tracking.application_name != table.name:
        raise ValueError(f"tracking of {tracking.application_name!r} for projection {table.name!r}")
    return tracking.notification_id


def kind_of(log: LogApplication | Backend) -> StoreKind:
    """The kind of store that holds ``log`` (a Journal log's application or a storage
    backend)."""
    return store_kind(log.driver.kind if isinstance(log, Backend) else log.location.kind)


def projection_recorder(log: LogApplication | Backend) -> ProjectionRecorder:
    """The projections kept in the store of ``log``: a Journal log's application or a
    storage backend (its file, schema or process). Nothing is created until a projection
    is first written."""
    kind = kind_of(log)
    return cast(ProjectionRecorder, kind.load(kind.projections)(log))
