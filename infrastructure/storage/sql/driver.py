"""``SqlDriver``: the physical operations shared by the SQLite and PostgreSQL drivers.

A subclass supplies connections and transactions (``transaction`` yields a
:class:`Session`), and the serialisation of schema creation
(``_open_schema``). The SPI core has already validated every argument and
locked the guards when an operation gets here.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from nenjim.infrastructure.storage.conditions import _Unchecked
from nenjim.infrastructure.storage.driver import AttributeValues, CheckRead, StorageDriver
from nenjim.infrastructure.storage.entries import (
    AppendEntry,
    Attributes,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
)
from nenjim.infrastructure.storage.errors import UnsupportedBackendError
from nenjim.infrastructure.storage.reads import PreparedRead, RecordRead, RecordScan, StreamRead
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.selection import Selection
from nenjim.infrastructure.storage.sql import blobs, events, purges, records, streams, together
from nenjim.infrastructure.storage.sql.dialect import Dialect
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import RecordGuard, Session

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.purge import Purge


class SqlDriver(StorageDriver[Session]):
    """Records, streams and blobs on the ``storage_events`` log and its inline projections."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._layout: Layout | None = None

    def open(self, resources: Sequence[Resource]) -> None:
        """Plan the catalog's indexes and bring the schema up to date (idempotent)."""
        layout = Layout(self.dialect, resources)
        self._open_schema(layout)
        self._layout = layout

    @abstractmethod
    def _open_schema(self, layout: Layout) -> None:
        """Apply :func:`~nenjim.infrastructure.storage.sql.schema.apply` under the DDL lock."""

    @property
    def layout(self) -> Layout:
        """The generated indexes of the catalog this driver was opened with."""
        if self._layout is None:
            raise UnsupportedBackendError("SQL driver used before open()")
        return self._layout

    # records
    def read_record(self, ctx: Session, resource: Resource, key: str) -> RecordEntry | None:
        records.lock_guards(ctx)
        return records.read(ctx, resource, key)

    def read_together(self, ctx: Session, reads: Sequence[PreparedRead[Any]]) -> list[Any]:
        records.lock_guards(ctx)
        queries: list[together.Query] = []
        answers: list[Callable[[Sequence[Any]], Any]] = []
        for read in reads:
            if isinstance(read, StreamRead):
                statement = streams.read_statement(
                    ctx, read.resource, read.stream, read.after, read.limit
                )
                queries.append(together.Query(*statement, ctx.dialect.entry_nulls))
                answers.append(streams.entries)
            elif isinstance(read, RecordScan):
                statement = records.scan_statement(
                    ctx,
                    self.layout,
                    read.resource,
                    read.equals,
                    after=read.after,
                    limit=read.limit,
                    key_prefix=read.key_prefix,
                )
                queries.append(together.Query(*statement, ctx.dialect.record_nulls))
                answers.append(partial(records.scanned, ctx, read.resource))
            elif isinstance(read, RecordRead):
                statement = records.read_statement(read.resource, read.key)
                queries.append(together.Query(*statement, ctx.dialect.record_nulls))
                answers.append(partial(records.read_answer, ctx, read.resource))
            else:
                raise TypeError(f"not a prepared read: {type(read).__name__}")
        if len(queries) > 1 and ctx.dialect.reads_in_one_statement:
            found = together.answers(queries, ctx.all(*together.statement(ctx.dialect, queries)))
        else:
            found = [ctx.all(template, params) for template, params, _ in queries]
        return [answer(rows) for answer, rows in zip(answers, found, strict=True)]

    def record_revision(self, ctx: Session, resource: Resource, key: str) -> int | None:
        records.lock_guards(ctx)
        return records.revision(ctx, resource, key)

    def record_attributes(self, ctx: Session, resource: Resource, key: str) -> Attributes | None:
        records.lock_guards(ctx)
        return records.attributes(ctx, resource, key)

    def insert_record(self, ctx: Session, resource: Resource, entry: RecordEntry) -> RecordEntry:
        return records.insert(ctx, self.layout, resource, entry)

    def replace_record(
        self,
        ctx: Session,
        resource: Resource,
        entry: RecordEntry,
        expected_revision: int,
        expected_attributes: AttributeValues,
    ) -> RecordEntry:
        return records.replace(
            ctx,
            self.layout,
            resource,
            entry,
            expected_revision=expected_revision,
            expected_attributes=expected_attributes,
        )

    def delete_record(
        self, ctx: Session, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> None:
        records.lock_guards(ctx)
        records.delete(ctx, resource, key, expected_revision)

    def scan_records(
        self,
        ctx: Session,
        resource: Resource,
        equals: AttributeValues,
        after: str | None,
        limit: int | None,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[RecordEntry]:
        records.lock_guards(ctx)
        return records.scan(
            ctx, self.layout, resource, equals, after=after, limit=limit, key_prefix=key_prefix
        )

    def scan_record_keys(
        self,
        ctx: Session,
        resource: Resource,
        equals: AttributeValues,
        after: str | None,
        limit: int | None,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[str]:
        records.lock_guards(ctx)
        return records.scan_keys(
            ctx, self.layout, resource, equals, after=after, limit=limit, key_prefix=key_prefix
        )

    def select_records(
        self,
        ctx: Session,
        resource: Resource,
        equals: AttributeValues,
        selection: Selection,
        *,
        key_prefix: str | None = None,
    ) -> Sequence[RecordEntry]:
        records.lock_guards(ctx)
        return records.select(ctx, self.layout, resource, equals, selection, key_prefix=key_prefix)

    def any_record(self, ctx: Session, resource: Resource, equals: AttributeValues) -> bool:
        records.lock_guards(ctx)
        return records.any_matching(ctx, self.layout, resource, equals)

    def delete_matching_records(
        self, ctx: Session, resource: Resource, equals: AttributeValues
    ) -> None:
        records.lock_guards(ctx)
        records.delete_matching(ctx, self.layout, resource, equals)

    def record_history(self, ctx: Session, resource: Resource, key: str) -> Sequence[RecordedEntry]:
        records.lock_guards(ctx)
        return records.history(ctx, resource, key)

    def purge_record(
        self, ctx: Session, resource: Resource, key: str, expected_revision: int | _Unchecked
    ) -> Purge | None:
        records.lock_guards(ctx)
        records.delete(ctx, resource, key, expected_revision)
        originator = events.record_stream(resource.id, key)
        return purges.remove(ctx, originator, "records", resource.id, key)

    def purges_of(self, ctx: Session, kind: str, resource: Resource, key: str) -> Sequence[Purge]:
        records.lock_guards(ctx)
        return purges.markers(ctx, kind, resource.id, key)

    # streams
    def append_stream(
        self,
        ctx: Session,
        resource: Resource,
        stream: str,
        expected_head: int,
        entries: Sequence[AppendEntry],
    ) -> Sequence[StreamEntry]:
        return streams.append(ctx, resource, stream, expected_head, entries)

    def read_stream(
        self, ctx: Session, resource: Resource, stream: str, after: int, limit: int | None
    ) -> Sequence[StreamEntry]:
        records.lock_guards(ctx)
        return streams.read(ctx, resource, stream, after, limit)

    def stream_head(self, ctx: Session, resource: Resource, stream: str) -> int:
        records.lock_guards(ctx)
        return streams.head(ctx, resource, stream)

    def delete_stream(self, ctx: Session, resource: Resource, stream: str) -> None:
        records.lock_guards(ctx)
        streams.delete(ctx, resource, stream)

    def stream_names(
        self, ctx: Session, resource: Resource, after: str | None, limit: int
    ) -> Sequence[str]:
        records.lock_guards(ctx)
        return streams.names(ctx, resource, after, limit)

    def purge_stream(
        self, ctx: Session, resource: Resource, stream: str, before: int | None
    ) -> Purge | None:
        records.lock_guards(ctx)
        return streams.purge(ctx, resource, stream, before)

    # blobs
    def put_blob(self, ctx: Session, resource: Resource, blob: BlobEntry) -> BlobEntry:
        records.lock_guards(ctx)
        return blobs.put(ctx, resource, blob)

    def fetch_blob(self, ctx: Session, resource: Resource, key: str) -> BlobEntry | None:
        records.lock_guards(ctx)
        return blobs.fetch(ctx, resource, key)

    def blob_exists(self, ctx: Session, resource: Resource, key: str) -> bool:
        records.lock_guards(ctx)
        return blobs.exists(ctx, resource, key)

    def purge_blob(self, ctx: Session, resource: Resource, key: str) -> Purge | None:
        records.lock_guards(ctx)
        return blobs.purge(ctx, resource, key)

    # guards
    def lock_guard(self, ctx: Session, resource: Resource, key: str) -> None:
        records.lock_guards(ctx)
        records.lock_guard(ctx, resource, key)

    # Where the transaction already holds the only write lock (SQLite), finding a row is
    # locking it: check() reads its anchors and conditions with one statement. Elsewhere
    # each anchor's row lock is a statement of its own, and the reads follow it.
    def prepare_check_read(self, read: CheckRead) -> Any:
        if self.dialect.for_update:
            return read
        return records.prepared_check_read(self.dialect, self.layout, read)

    def check_reads(
        self, ctx: Session, anchors: Sequence[tuple[Resource, str]], reads: Sequence[Any]
    ) -> list[Any]:
        if self.dialect.for_update:
            return super().check_reads(ctx, anchors, reads)
        records.lock_guards(ctx)
        return records.check_reads(ctx, anchors, reads)

    def lock_record_guard(
        self, ctx: Session, resource: Resource, key: str, anchor: Resource, via: str
    ) -> None:
        # The row's attribute is read by the statement that locks the anchor it
        # names, sent with the next operation's first (one round trip, one statement).
        ctx.guards.append(RecordGuard(anchor.id, resource.id, key, via))

    def lock_guard_with_next(self, ctx: Session, resource: Resource, key: str) -> None:
        # Inserts, replaces and appends send the lock with their first statement (in
        # it, where the dialect can), so the anchor costs no round trip and, where it
        # goes into the write's own statement, no statement either; every other
        # operation locks it first thing.
        ctx.guards.append((resource.id, key))
