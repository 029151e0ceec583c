"""The physical operation set a storage driver implements.

The SPI core validates every argument, resolves guards and manages scopes;
a driver only performs these operations inside the physical transaction
(``context``) it opened. Conflict checks that need the stored state (duplicate
keys, revisions, attribute preconditions, unique constraints, stream heads and
ids, blob bytes) are the driver's, because only it can make them atomic.

What a driver raises is specified by class and attributes, never by message,
which is the driver's own: ``ConflictError`` (or its ``UniqueConstraintError``
with ``resource`` and ``constraint``, ``BlobConflictError``) and
``NotFoundError`` with ``resource`` and ``key`` naming the missing row (the
record a write needs, or the anchor a guard needs). The conformance kit
checks exactly that.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from nenjim.infrastructure.storage.conditions import _Unchecked
from nenjim.infrastructure.storage.entries import (
    AppendEntry,
    Attributes,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from nenjim.infrastructure.storage.errors import NotFoundError
from nenjim.infrastructure.storage.reads import PreparedRead, RecordRead, RecordScan, StreamRead
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.selection import Selection

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.purge import Purge

ContextT = TypeVar("ContextT")
"""What a driver's transaction yields and its operations take: the SQL drivers'
``Session`` (a connection in a transaction), the in-memory driver's working state."""
AttributeValues = Mapping[str, str | int | bool | None]

REVISION = "revision"
HEAD = "head"
ROWS = "rows"

CheckRead = tuple[str, Resource, Any]
"""One read of ``check()``: ``(REVISION, records resource, key)``, answered with the
stored revision or ``None``; ``(HEAD, streams resource, stream)``, with the head (0 for a
missing stream); ``(ROWS, records resource, equals)``, with whether some row's
attributes equal ``equals``."""


class StorageDriver(ABC, Generic[ContextT]):
    """Physical storage for one backend's resources, in transactions of ``ContextT``.

    The SPI core never looks inside a context: it hands each operation the
    one its transaction yielded.
    """

    kind: str
    """The name of the store kind the driver belongs to (``memory``, ``sqlite``, ...)."""

    one_writer = False
    """Whether one transaction writes at a time, the others polling with sleeps (callers
    do better to queue their own transactions)."""

    @abstractmethod
    def transaction(self, outer: ContextT | None) -> AbstractContextManager[ContextT]:
        """Open a transaction (``outer`` is ``None``) or a savepoint inside ``outer``.

        The context manager commits (or releases the savepoint) on a normal
        exit and rolls back on any exception, re-raising it unchanged.
        """

    def reads(self) -> AbstractContextManager[ContextT]:
        """A context for reads only, outside any transaction of the thread. A driver may
        run each of its statements as a transaction of its own, each seeing what was
        committed when it started; by default it is a transaction."""
        return self.transaction(None)

    def close(self) -> None:
        """Release connections and files."""

    # records
    @abstractmethod
    def read_record(self, ctx: ContextT, resource: Resource, key: str) -> RecordEntry | None:
        """The stored row, or ``None``."""

    def record_revision(self, ctx: ContextT, resource: Resource, key: str) -> int | None:
        """The stored revision only (``check()`` needs no more); ``None`` if missing.

        Drivers that can read one column cheaply override this.
        """
        row = self.read_record(ctx, resource, key)
        return None if row is None else row.revision

    def record_attributes(self, ctx: ContextT, resource: Resource, key: str) -> Attributes | None:
        """The stored attributes only (a guard's anchor needs no more); ``None`` if missing.

        Drivers that can read one column cheaply override this.
        """
        row = self.read_record(ctx, resource, key)
        return None if row is None else row.attributes

    @abstractmethod
    def insert_record(self, ctx: ContextT, resource: Resource, entry: RecordEntry) -> RecordEntry:
        """Store a new row: duplicate key → ConflictError; unique → UniqueConstraintError."""

    @abstractmethod
    def replace_record(
        self,
        ctx: ContextT,
        resource: Resource,
        entry: RecordEntry,
        expected_revision: int,
        expected_attributes: AttributeValues,
    ) -> RecordEntry:
        """CAS: revision, expected attributes, immutables, then unique; a missing row is a
        NotFoundError naming it."""

    @abstractmethod
    def delete_record(
        self, ctx: ContextT, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> None:
        """Delete an existing row (a wrong checked revision is a ConflictError)."""

    @abstractmethod
    def scan_records(
        self,
        ctx: ContextT,
        resource: Resource,
        equals: AttributeValues,
        after: str | None,
        limit: int | None,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[RecordEntry]:
        """Rows whose attributes equal ``equals`` and whose keys start with ``key_prefix``
        (``None``: any key), by UTF-8 key bytes, after ``after``."""

    def scan_record_keys(
        self,
        ctx: ContextT,
        resource: Resource,
        equals: AttributeValues,
        after: str | None,
        limit: int | None,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[str]:
        """The keys :meth:`scan_records` would return, in its order.

        Drivers that can answer without decoding rows override this.
        """
        rows = self.scan_records(ctx, resource, equals, after, limit, key_prefix=key_prefix)
        return [row.key for row in rows]

    def select_records(
        self,
        ctx: ContextT,
        resource: Resource,
        equals: AttributeValues,
        selection: Selection,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[RecordEntry]:
        """The page ``selection`` gives of the rows whose attributes equal ``equals`` and
        whose keys start with ``key_prefix``.

        By default every such row is read and the selection applied in Python;
        drivers whose database can test and order payloads override this, and
        must give the same rows in the same order.
        """
        return selection.apply(
            self.scan_records(ctx, resource, equals, None, None, key_prefix=key_prefix)
        )

    def any_record(self, ctx: ContextT, resource: Resource, equals: AttributeValues) -> bool:
        """Whether some row's attributes equal ``equals`` (``NoRows`` needs no more).

        Drivers that can answer without reading rows override this.
        """
        return bool(self.scan_records(ctx, resource, equals, None, 1))

    @abstractmethod
    def delete_matching_records(
        self, ctx: ContextT, resource: Resource, equals: AttributeValues
    ) -> None:
        """Delete every row whose attributes equal ``equals``.

        The core calls it for resources whose matching rows share one anchor it
        has locked (through an attribute), are their own anchors (a root, whose
        rows the driver locks as it deletes them) or have none; rows guarded via
        their key it deletes one by one under their anchors' locks.
        """

    @abstractmethod
    def record_history(
        self, ctx: ContextT, resource: Resource, key: str
    ) -> Sequence[RecordedEntry]:
        """Every revision ever written under ``key``, in write order, with its time."""

    @abstractmethod
    def purge_record(
        self, ctx: ContextT, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> Purge | None:
        """Delete the row, if any, as :meth:`delete_record` does (a checked revision that
        differs, or a missing row, is a ConflictError), and purge every revision the log
        holds of ``key`` (:mod:`~nenjim.infrastructure.storage.purge`); ``None`` if the log
        held none."""

    @abstractmethod
    def purges_of(self, ctx: ContextT, kind: str, resource: Resource, key: str) -> Sequence[Purge]:
        """The purges of ``key`` (a record or blob key, a stream) the log holds, oldest first."""

    def record_written_at(self, ctx: ContextT, resource: Resource, key: str) -> datetime | None:
        """When the log recorded the last write of ``key`` (``None`` if none is left).

        Drivers that can read the last event alone override this."""
        written = self.record_history(ctx, resource, key)
        return written[-1].recorded_at if written else None

    # streams
    @abstractmethod
    def append_stream(
        self,
        ctx: ContextT,
        resource: Resource,
        stream: str,
        expected_head: int,
        entries: Sequence[AppendEntry],
    ) -> Sequence[StreamEntry]:
        """Append at ``expected_head``: head mismatch or known id → ConflictError.

        The entries returned are the caller's to keep: their records are copies that
        neither the store nor the caller's ``entries`` hold (a 100-entry append builds
        them once, not once here and again in the view)."""

    @abstractmethod
    def read_stream(
        self, ctx: ContextT, resource: Resource, stream: str, after: int, limit: int | None
    ) -> Sequence[StreamEntry]:
        """Entries after ``after`` in position order."""

    def read_together(self, ctx: ContextT, reads: Sequence[PreparedRead[Any]]) -> list[Any]:
        """The answers of ``reads`` (validated), in their order: each what
        :meth:`read_stream`, :meth:`scan_records` or :meth:`read_record` answers for it.

        By default they run one after the other; a driver that can send several
        statements at once overrides this to save the round trips between them.
        """
        answers: list[Any] = []
        for read in reads:
            if isinstance(read, StreamRead):
                answers.append(
                    self.read_stream(ctx, read.resource, read.stream, read.after, read.limit)
                )
            elif isinstance(read, RecordScan):
                answers.append(
                    self.scan_records(
                        ctx,
                        read.resource,
                        read.equals,
                        read.after,
                        read.limit,
                        key_prefix=read.key_prefix,
                    )
                )
            elif isinstance(read, RecordRead):
                answers.append(self.read_record(ctx, read.resource, read.key))
            else:
                raise TypeError(f"not a prepared read: {type(read).__name__}")
        return answers

    @abstractmethod
    def stream_head(self, ctx: ContextT, resource: Resource, stream: str) -> int:
        """The head position (0 for a missing stream)."""

    @abstractmethod
    def delete_stream(self, ctx: ContextT, resource: Resource, stream: str) -> None:
        """Remove the entries and the head; the stream restarts at position 1."""

    @abstractmethod
    def stream_names(
        self, ctx: ContextT, resource: Resource, after: str | None, limit: int
    ) -> Sequence[str]:
        """The names of the streams with a head row, by UTF-8 bytes, after ``after``."""

    @abstractmethod
    def purge_stream(
        self, ctx: ContextT, resource: Resource, stream: str, before: int | None
    ) -> Purge | None:
        """``before`` ``None``: delete the stream as :meth:`delete_stream` does and purge
        every entry the log holds of it. Else purge the entries at positions below
        ``before`` (and every entry of the stream's earlier lives); the head stays, reads
        skip the purged positions and their ids are free again. ``None`` if the log held
        no entry to purge."""

    # blobs
    @abstractmethod
    def put_blob(self, ctx: ContextT, resource: Resource, blob: BlobEntry) -> BlobEntry:
        """Store once; same bytes → the stored entry; other bytes → BlobConflictError."""

    @abstractmethod
    def fetch_blob(self, ctx: ContextT, resource: Resource, key: str) -> BlobEntry | None:
        """The stored blob, or ``None``."""

    def blob_exists(self, ctx: ContextT, resource: Resource, key: str) -> bool:
        """Whether a blob is stored under ``key``. This default fetches the blob; a driver
        that can answer without reading the bytes overrides it."""
        return self.fetch_blob(ctx, resource, key) is not None

    @abstractmethod
    def purge_blob(self, ctx: ContextT, resource: Resource, key: str) -> Purge | None:
        """Delete the blob and purge its bytes from the log; ``None`` if the log held none.
        A later put of the key stores it anew."""

    # guards
    @abstractmethod
    def lock_guard(self, ctx: ContextT, resource: Resource, key: str) -> None:
        """Lock the anchor row for the rest of the transaction; NotFoundError naming it
        (``resource``, ``key``) if missing."""

    def lock_record_guard(
        self, ctx: ContextT, resource: Resource, key: str, anchor: Resource, via: str
    ) -> None:
        """:meth:`lock_guard_with_next` of the anchor that attribute ``via`` of stored row
        ``key`` names (none if it is null); NotFoundError if the row is missing.

        Drivers with round trips override this to find and lock the anchor in
        one statement sent with the next operation's first.
        """
        current = self.record_attributes(ctx, resource, key)
        if current is None:
            raise NotFoundError(
                f"record not found: {resource.id}/{key}", resource=resource.id, key=key
            )
        value = current.get(via)
        if value is not None:
            self.lock_guard_with_next(ctx, anchor, str(value))

    def prepare_check_read(self, read: CheckRead) -> Any:
        """``read`` as :meth:`check_reads` takes it, made once per condition (what does not
        change from one check to the next). By default ``read`` itself."""
        return read

    def check_reads(
        self,
        ctx: ContextT,
        anchors: Sequence[tuple[Resource, str]],
        reads: Sequence[Any],
    ) -> list[Any]:
        """What ``check()`` reads: lock ``anchors`` in order (NotFoundError for the first
        missing), then answer ``reads`` (each made by :meth:`prepare_check_read` from a
        :data:`CheckRead`) in order.

        Drivers that can read them all at once override both.
        """
        for resource, key in anchors:
            self.lock_guard(ctx, resource, key)
        answers: list[Any] = []
        for kind, resource, argument in reads:
            if kind == REVISION:
                answers.append(self.record_revision(ctx, resource, argument))
            elif kind == HEAD:
                answers.append(self.stream_head(ctx, resource, argument))
            else:
                answers.append(self.any_record(ctx, resource, argument))
        return answers

    def lock_guard_with_next(self, ctx: ContextT, resource: Resource, key: str) -> None:
        """:meth:`lock_guard`, or have the next operation in ``ctx`` lock it first.

        The next operation then locks the anchor before anything else and
        raises its NotFoundError before any other error; a driver with round
        trips sends the lock with that operation's first statement. Whatever
        that operation wrote before is undone by the scope its error fails.
        """
        self.lock_guard(ctx, resource, key)
