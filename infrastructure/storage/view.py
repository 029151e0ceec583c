"""``View`` and its handles: argument validation, guards, then one physical operation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.conditions import (
    UNCHECKED,
    GuardRef,
    NoRows,
    RevisionIs,
    StreamHeadIs,
    _Unchecked,
    no_rows_guard_problem,
)
from nenjim.infrastructure.storage.driver import HEAD, REVISION, ROWS, StorageDriver
from nenjim.infrastructure.storage.durable_record import DurableRecord
from nenjim.infrastructure.storage.entries import (
    AppendEntry,
    BlobEntry,
    RecordedEntry,
    RecordEntry,
    StreamEntry,
    validated_record_entry,
)
from nenjim.infrastructure.storage.errors import (
    ConditionFailedError,
    ConflictError,
    NotFoundError,
    SerializationError,
    TransactionError,
)
from nenjim.infrastructure.storage.reads import PreparedRead, RecordRead, RecordScan, StreamRead
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.rules import attributes_match
from nenjim.infrastructure.storage.scalars import validate_key, validate_limit, validate_revision
from nenjim.infrastructure.storage.selection import FieldOrder, FieldTest, Selection

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.backend import Backend, Scope
    from nenjim.infrastructure.storage.purge import Purge

_T = TypeVar("_T")
_H = TypeVar("_H", bound="_Handle")


class View:
    """Access to a backend's resources: the root view (``scope`` None) or a bound one."""

    def __init__(self, backend: Backend, scope: Scope | None) -> None:
        self._backend = backend
        self._scope = scope
        self._handles: dict[tuple[str, str], Any] = {}
        self._resources = backend.resources

    def records(self, resource: Resource | str) -> Records:
        """The records handle of ``resource`` (cached per view)."""
        return self._handle(resource, "records", Records)

    def streams(self, resource: Resource | str) -> Streams:
        """The streams handle of ``resource`` (cached per view)."""
        return self._handle(resource, "streams", Streams)

    def blobs(self, resource: Resource | str) -> Blobs:
        """The blobs handle of ``resource`` (cached per view)."""
        return self._handle(resource, "blobs", Blobs)

    def check(self, *, guards: Sequence[GuardRef], conditions: Sequence[Any]) -> bool:
        """Lock ``guards`` in a fixed order, then require every condition; True or raise.

        A false condition raises ``ConditionFailedError`` carrying that very
        condition object, inside the physical scope (so it fails the scope).
        """
        if self._scope is not None:
            self._scope.ensure_usable()
        resolve = self._backend.resolve
        anchors = []
        for guard in _ordered(guards, "guards"):
            if not isinstance(guard, GuardRef):
                raise TypeError(f"not a GuardRef: {guard!r}")
            anchors.append((resolve(guard.resource, "records").id, guard.key))
        # A condition is immutable and so is the catalog its resource resolves in:
        # one built once and checked again and again is resolved and validated once.
        catalog = self._resources
        resolved: list[tuple[RevisionIs | StreamHeadIs | NoRows, _Plan]] = []
        for condition in _ordered(conditions, "conditions"):
            if not isinstance(condition, _CONDITIONS):
                raise TypeError(
                    f"not a condition (RevisionIs, StreamHeadIs, NoRows): {condition!r}"
                )
            cached = condition._plan
            if cached is None or cached[0] is not catalog:
                kind, resource, argument, anchor = self._plan(condition)
                read = self._backend.driver.prepare_check_read((kind, resource, argument))
                cached = (catalog, (kind, resource, argument, anchor, read))
                object.__setattr__(condition, "_plan", cached)
            resolved.append((condition, cached[1]))
        named = False
        for condition, (_, resource, _, anchor, _) in resolved:
            if anchor is None:
                continue
            if isinstance(anchor, str):
                raise ValueError(anchor)
            if isinstance(anchor, _NamedAnchor):
                named = True
                if not any(held == anchor.resource for held, _ in anchors):
                    raise ValueError(
                        f"{type(condition).__name__} on {resource.id} needs a GuardRef to "
                        f"{anchor.resource}: the one its row's {anchor.via!r} names"
                    )
            elif anchor not in anchors:
                raise ValueError(
                    f"{type(condition).__name__} on {resource.id} needs "
                    f"GuardRef({anchor[0]!r}, {anchor[1]!r}) in guards"
                )

        if len(anchors) == 1:  # the usual case: nothing to order
            ((resource_id, key),) = anchors
            locks = [(catalog[resource_id], key)]
        else:
            locks = [
                (catalog[resource_id], key)
                for resource_id, key in sorted(
                    set(anchors), key=lambda a: (a[0].encode(), a[1].encode())
                )
            ]

        reads = [read for _, (_, _, _, _, read) in resolved]

        held = frozenset(anchors) if named else frozenset()

        def operation(ctx: Any, driver: StorageDriver[Any]) -> bool:
            answers = driver.check_reads(ctx, locks, reads)
            for (condition, (_, resource, argument, anchor, _)), answer in zip(
                resolved, answers, strict=True
            ):
                # A row the check found must name an anchor it holds (RevisionIs only).
                if (
                    answer is not None
                    and isinstance(anchor, _NamedAnchor)
                    and isinstance(condition, RevisionIs)
                ):
                    _require_held_anchor(
                        ctx,
                        driver,
                        condition=condition,
                        resource=resource,
                        anchor=anchor,
                        held=held,
                    )
                _judge(condition, resource, argument, answer)
            return True

        return self.run(operation, writes=False)

    def atomic(self, function: Callable[[View], _T]) -> _T:
        """Run ``function(view)`` as one physical step: operations and what decodes them.

        Domain code reads and decodes inside one scope this way; an exception
        raised inside (a decode failure included) fails the scope, as a failed
        physical operation does, so callers validate their arguments first. A
        bound view runs it inline; the root view joins the thread's open scope
        or opens one for this step.
        """
        scope = self._scope or self._backend.current_scope()
        if scope is None:
            with self._backend.transaction() as view:
                return view.atomic(function)
        scope.ensure_usable()
        try:
            return function(self if self._scope is not None else View(self._backend, scope))
        except BaseException:
            scope.failed = True
            raise

    def run(self, operation: Callable[[Any, StorageDriver[Any]], _T], *, writes: bool = True) -> _T:
        """Run one physical operation in this view's scope.

        The root view joins the thread's innermost open scope, or opens a
        transaction of its own for just this operation. ``writes=False``
        promises that the operation only reads (and locks), so that
        transaction has nothing to make durable; any other is refused in a
        read-only scope (:meth:`Backend.reading`) with ``TransactionError``,
        before it runs. A root-view operation may
        run more than once before it commits (a group-committed batch runs
        again when one of its operations failed); the writes of its last run
        are the ones kept, so it must not act outside the transaction.
        """
        backend = self._backend
        scope = self._scope or backend.current_scope()
        if scope is None:
            return backend.run_alone(operation, writes=writes)
        if writes and scope.read_only:
            raise TransactionError(
                "a write in a read-only scope (Backend.reading): open a transaction for it"
            )
        return scope.run_on(operation, backend.driver)

    def run_read(self, operation: Callable[[Any, StorageDriver[Any]], _T]) -> _T:
        """:meth:`run` of one single read of the driver (``read_record``, ``scan_records``,
        ``scan_record_keys`` or ``read_together``), which only reads: outside any scope of
        this thread the backend may run it without a transaction around it
        (:meth:`Backend.read_alone`)."""
        backend = self._backend
        scope = self._scope or backend.current_scope()
        if scope is None:
            return backend.read_alone(operation)
        return scope.run_on(operation, backend.driver)

    def read_together(self, *reads: PreparedRead[Any]) -> tuple[Any, ...]:
        """The answers of several prepared reads, in their order, run in one step.

        Each read (``Streams.prepared_read``, ``Records.prepared_scan``,
        ``Records.prepared_read``) answers what its own call would, and sees at
        least what the one before it saw; none may depend on another's answer.
        A driver may send them at once (on PostgreSQL one round trip for all).
        Outside a scope they run in no transaction, as a lone read does.
        """
        self.ensure_usable()
        for read in reads:
            if not isinstance(read, PreparedRead):
                raise TypeError(f"not a prepared read: {type(read).__name__}")
            self._resources_hold(read.resource)
        answers = self.run_read(lambda ctx, driver: driver.read_together(ctx, reads))
        return tuple(_fresh(answer) for answer in answers)

    def _resources_hold(self, resource: Resource) -> None:
        """Refuse a prepared read of a resource this backend does not register (a read
        prepared on another backend's view)."""
        if self._resources.get(resource.id) is not resource:
            raise ValueError(f"resource {resource.id!r} is not registered with this backend")

    def ensure_usable(self) -> None:
        """Raise ``TransactionError`` if this bound view may not be used now."""
        if self._scope is not None:
            self._scope.ensure_usable()

    def _handle(self, reference: Resource | str, kind: str, cls: type[_H]) -> _H:
        self.ensure_usable()
        resource = self._backend.resolve(reference, kind)
        slot = (kind, resource.id)
        handle = self._handles.get(slot)
        if not isinstance(handle, cls):
            handle = self._handles[slot] = cls(self, resource)
        return handle

    def _plan(
        self, condition: RevisionIs | StreamHeadIs | NoRows
    ) -> tuple[str, Resource, Any, Any]:
        """How to evaluate ``condition``: the type is dispatched on once, here.

        The plan is what the driver reads (a :data:`CheckRead` kind, the resource,
        and the key, the stream or the validated ``NoRows`` values) and the anchor:
        ``None`` for an unguarded resource, a ``(resource id, key)`` the guards must
        hold, a :class:`_NamedAnchor` (the one the stored row names), or the message
        of the ``ValueError`` of a guard that cannot cover the condition (raised
        after every condition resolved, as a missing anchor is).
        """
        if isinstance(condition, RevisionIs):
            resource = self._backend.resolve(condition.resource, "records")
            anchor_id, via = resource.guard_resource, resource.guard_attribute
            if anchor_id is None:
                anchor: Any = None
            elif via is not None:
                anchor = _NamedAnchor(anchor_id, via)
            else:
                anchor = (anchor_id, condition.key)
            return REVISION, resource, condition.key, anchor
        if isinstance(condition, StreamHeadIs):
            resource = self._backend.resolve(condition.resource, "streams")
            guard = resource.guard
            anchor = None if guard is None else (guard["resource"], condition.stream)
            return HEAD, resource, condition.stream, anchor
        resource = self._backend.resolve(condition.resource, "records")
        equals = resource.index_values(condition.index, condition.equals)
        anchor_id = resource.guard_resource
        if anchor_id is None:
            return ROWS, resource, equals, None
        problem, via = no_rows_guard_problem(resource, equals), resource.guard_attribute
        anchor = problem if problem is not None or via is None else (anchor_id, equals[via])
        return ROWS, resource, equals, anchor


def _judge(
    condition: RevisionIs | StreamHeadIs | NoRows,
    resource: Resource,
    equals: Any,
    answer: Any,
) -> None:
    """``ConditionFailedError`` carrying ``condition`` if the driver's ``answer`` to its
    read (see :data:`CheckRead`) does not meet it; ``equals``: a ``NoRows``' values."""
    if isinstance(condition, RevisionIs):
        if answer != condition.expected:
            found = "missing" if answer is None else f"at revision {answer}"
            raise ConditionFailedError(
                condition,
                f"condition failed: {resource.id}/{condition.key} expected revision "
                f"{condition.expected}, {found}",
            )
    elif isinstance(condition, StreamHeadIs):
        if answer != condition.expected:
            raise ConditionFailedError(
                condition,
                f"condition failed: {resource.id}/{condition.stream} expected head "
                f"{condition.expected}, found {answer}",
            )
    elif answer:
        raise ConditionFailedError(
            condition,
            f"condition failed: {resource.id} has rows in {condition.index} {dict(equals)}",
        )


class _NamedAnchor(NamedTuple):
    """The anchor of ``resource`` that attribute ``via`` of a stored row names."""

    resource: str
    via: str


def _require_held_anchor(
    ctx: Any,
    driver: StorageDriver[Any],
    *,
    condition: RevisionIs,
    resource: Resource,
    anchor: _NamedAnchor,
    held: frozenset[tuple[str, str]],
) -> None:
    """``ConditionFailedError`` unless the row of ``condition``, which the check found,
    names an anchor ``held``: no lock the check holds keeps a row under another anchor.

    Read after the locks: a row naming a held anchor is the one the check read (no
    writer could delete it, or write it under that anchor, meanwhile).
    """
    key = condition.key
    stored = driver.record_attributes(ctx, resource, key)
    named = None if stored is None else stored.get(anchor.via)
    if (anchor.resource, named) not in held:
        found = "missing" if stored is None else f"guarded by {anchor.resource}/{named}"
        raise ConditionFailedError(
            condition,
            f"condition failed: {resource.id}/{key} is {found}, not under an anchor the "
            "check locks",
        )


_Plan = tuple[str, Resource, Any, Any, Any]
"""A condition's read (its :data:`CheckRead` kind, resource and argument), the anchor it
needs locked, and the read as the backend's driver prepared it."""

_CONDITIONS = (RevisionIs, StreamHeadIs, NoRows)

_NOTHING_EXPECTED: Mapping[str, Any] = MappingProxyType({})


@immutable
class _Handle:
    """A view's access to one resource; it cannot be pointed at another."""

    __slots__ = ("_view", "resource")
    _view: View
    resource: Resource

    def __init__(self, view: View, resource: Resource) -> None:
        object.__setattr__(self, "_view", view)
        object.__setattr__(self, "resource", resource)

    def purges(self, key: str) -> tuple[Purge, ...]:
        """The purges the log records of ``key`` (a record or blob key, or a stream), oldest
        first: how to tell a key whose values were erased from one never written."""
        self._view.ensure_usable()
        key = validate_key(key)
        resource = self.resource
        found = self._view.run(
            lambda ctx, driver: driver.purges_of(ctx, resource.kind, resource, key), writes=False
        )
        return tuple(found)

    def _guard(self, ctx: Any, driver: StorageDriver[Any], key: str | None) -> None:
        """Lock the anchor named by ``key`` (an own key, stream name or attribute value)."""
        anchor = self.resource.guard_resource
        if anchor is None or key is None:
            return
        driver.lock_guard_with_next(ctx, self._view._backend.resources[anchor], key)

    def _anchor_key(self, key: str, attributes: Mapping[str, Any]) -> str | None:
        """The anchor a row or stream names: its key or stream name, or its guard attribute."""
        if self.resource.guard is None:
            return None
        via = self.resource.guard_attribute
        if via is None:
            return key
        value = attributes.get(via)
        return None if value is None else str(value)


class Records(_Handle):
    """Records of one resource: CAS revisions, attributes, indexes, unique constraints."""

    __slots__ = ()

    def insert(
        self, *, key: str, revision: int, attributes: Mapping[str, Any], record: Any
    ) -> RecordEntry:
        """Store a new record; a duplicate key is a ``ConflictError``."""
        self._view.ensure_usable()
        entry = validated_record_entry(
            validate_key(key),
            validate_revision(revision),
            self.resource.validate_attributes(attributes),
            _durable(record),
        )

        def operation(ctx: Any, driver: StorageDriver[Any]) -> RecordEntry:
            if not self.resource.is_self_anchored:  # a root creates its own anchor
                self._guard(ctx, driver, self._anchor_key(entry.key, entry.attributes))
            return driver.insert_record(ctx, self.resource, entry).fresh()

        return self._view.run(operation)

    def read(self, key: str) -> RecordEntry | None:
        """The record, or ``None``."""
        self._view.ensure_usable()
        key = validate_key(key)
        found = self._view.run_read(lambda ctx, driver: driver.read_record(ctx, self.resource, key))
        return None if found is None else found.fresh()

    def fetch(self, key: str) -> RecordEntry:
        """The record; ``NotFoundError`` if missing (raised after the read, scope intact)."""
        self._view.ensure_usable()
        found = self.read(key)
        if found is None:
            raise NotFoundError(
                f"record not found: {self.resource.id}/{key}", resource=self.resource.id, key=key
            )
        return found

    def replace(
        self,
        *,
        key: str,
        expected_revision: int,
        next_revision: int,
        attributes: Mapping[str, Any],
        record: Any,
        expected_attributes: Mapping[str, Any] | None = None,
    ) -> RecordEntry:
        """Compare-and-swap from ``expected_revision`` to ``expected_revision + 1``."""
        self._view.ensure_usable()
        key = validate_key(key)
        validate_revision(expected_revision, "expected_revision")
        validate_revision(next_revision, "next_revision")
        entry = validated_record_entry(
            key, next_revision, self.resource.validate_attributes(attributes), _durable(record)
        )
        # Nothing expected (the usual replace) needs no validation; any other falsy
        # value ([], 0, "") is no mapping and is refused like a truthy one.
        nothing = expected_attributes is None or (
            expected_attributes.__class__ is dict and not expected_attributes
        )
        expected = (
            _NOTHING_EXPECTED
            if nothing
            else self.resource.validate_attributes(expected_attributes, partial=True)
        )
        if next_revision != expected_revision + 1:
            raise ConflictError(
                f"next_revision {next_revision} must be expected_revision + 1 "
                f"({expected_revision + 1})"
            )

        def operation(ctx: Any, driver: StorageDriver[Any]) -> RecordEntry:
            # Only an attribute guard needs the stored row to name its anchor (the
            # attribute is immutable); the driver reports a missing row itself.
            via, anchor_id = self.resource.guard_attribute, self.resource.guard_resource
            if via is not None and anchor_id is not None:
                anchor = self._view._backend.resources[anchor_id]
                driver.lock_record_guard(ctx, self.resource, key, anchor, via)
            else:
                self._guard(ctx, driver, self._anchor_key(key, {}))
            stored = driver.replace_record(ctx, self.resource, entry, expected_revision, expected)
            return stored.fresh()

        return self._view.run(operation)

    def delete(self, *, key: str, expected_revision: int | _Unchecked = UNCHECKED) -> None:
        """Delete; unchecked deletes of a missing key do nothing, checked ones conflict."""
        self._view.ensure_usable()
        key = validate_key(key)
        if expected_revision is not UNCHECKED:
            validate_revision(expected_revision, "expected_revision")

        def operation(ctx: Any, driver: StorageDriver[Any]) -> None:
            if self._lock_row_anchor(ctx, driver, key):
                driver.delete_record(ctx, self.resource, key, expected_revision)
            elif expected_revision is not UNCHECKED:
                raise ConflictError(
                    f"record deletion revision conflict: {self.resource.id}/{key} is missing"
                )

        self._view.run(operation)

    def purge(self, *, key: str, expected_revision: int | _Unchecked = UNCHECKED) -> Purge | None:
        """Delete the row, if any, and erase every revision of ``key`` from the log.

        The log keeps, in place of each removed revision, a stub with the digest
        of what it held, and one marker naming the key, the count and the digest
        of what was removed; :meth:`history` of the key is empty afterwards. The
        row's guard is taken, and ``expected_revision`` checked, as :meth:`delete`
        does. ``None`` if the log held no revision of the key (nothing to erase)."""
        self._view.ensure_usable()
        key = validate_key(key)
        if expected_revision is not UNCHECKED:
            validate_revision(expected_revision, "expected_revision")

        def operation(ctx: Any, driver: StorageDriver[Any]) -> Purge | None:
            self._lock_row_anchor(ctx, driver, key)
            return driver.purge_record(ctx, self.resource, key, expected_revision)

        return self._view.run(operation)

    def _lock_row_anchor(self, ctx: Any, driver: StorageDriver[Any], key: str) -> bool:
        """Lock the guard anchor of stored row ``key``; whether the row exists."""
        resource = self.resource
        current = driver.record_attributes(ctx, resource, key)
        if current is None:
            return False
        anchor = self._anchor_key(key, current)
        self._guard(ctx, driver, anchor)
        via = resource.guard_attribute
        # Read before the lock, the row may since have been deleted and written again
        # under another anchor: read again under the lock until it names one held.
        while via is not None and anchor is not None:
            again = driver.record_attributes(ctx, resource, key)
            named = None if again is None else again.get(via)
            if named is None or named == anchor:
                break
            anchor = str(named)
            self._guard(ctx, driver, anchor)
        return True

    def scan(
        self,
        *,
        index: str | None,
        equals: Mapping[str, Any],
        after: str | None = None,
        limit: int | None = None,
        key_prefix: str | None = None,
    ) -> tuple[RecordEntry, ...]:
        """Rows equal on ``index``, ascending by the UTF-8 bytes of the key; ``index``
        ``None`` (with ``equals={}``): every row of the resource. With ``key_prefix``,
        only the rows whose keys start with it: a range of the keys, which needs no
        index (with ``index`` ``None``, what a caller's keys are made to group)."""
        self._view.ensure_usable()
        read = self.prepared_scan(
            index=index, equals=equals, after=after, limit=limit, key_prefix=key_prefix
        )
        rows = self._view.run_read(
            lambda ctx, driver: driver.scan_records(
                ctx, self.resource, read.equals, read.after, read.limit, key_prefix=read.key_prefix
            )
        )
        return tuple(row.fresh() for row in rows)

    def prepared_read(self, key: str) -> RecordRead:
        """:meth:`read` of ``key``, validated now, to run in :meth:`View.read_together`."""
        return RecordRead(self.resource, validate_key(key))

    def prepared_scan(
        self,
        *,
        index: str | None,
        equals: Mapping[str, Any],
        after: str | None = None,
        limit: int | None = None,
        key_prefix: str | None = None,
    ) -> RecordScan:
        """:meth:`scan`, validated now, to run in :meth:`View.read_together`."""
        values = self.resource.scan_values(index, equals)
        if after is not None:
            after = validate_key(after, "after")
        validate_limit(limit)
        return RecordScan(self.resource, values, after, limit, _key_prefix(key_prefix))

    def select(
        self,
        *,
        index: str | None,
        equals: Mapping[str, Any],
        where: Sequence[FieldTest] = (),
        order: FieldOrder | None = None,
        offset: int = 0,
        limit: int | None = None,
        key_prefix: str | None = None,
    ) -> tuple[RecordEntry, ...]:
        """One page of the rows equal on ``index`` (``None``: every row) whose keys start
        with ``key_prefix`` (``None``: any key) and whose payloads pass every test of
        ``where``: in ``order`` (ascending by the key's UTF-8 bytes without one), from
        ``offset``, at most ``limit`` rows. A database driver answers with the page
        alone."""
        self._view.ensure_usable()
        values = self.resource.scan_values(index, equals)
        selection = Selection(tuple(where), order, offset, limit)
        prefix = _key_prefix(key_prefix)
        rows = self._view.run_read(
            lambda ctx, driver: driver.select_records(
                ctx, self.resource, values, selection, key_prefix=prefix
            )
        )
        return tuple(row.fresh() for row in rows)

    def scan_keys(
        self,
        *,
        index: str | None,
        equals: Mapping[str, Any],
        after: str | None = None,
        limit: int | None = None,
        key_prefix: str | None = None,
    ) -> tuple[str, ...]:
        """The keys of :meth:`scan` (same arguments, same order), no row decoded: for a
        caller whose keys say all it needs."""
        self._view.ensure_usable()
        read = self.prepared_scan(
            index=index, equals=equals, after=after, limit=limit, key_prefix=key_prefix
        )
        keys = self._view.run_read(
            lambda ctx, driver: driver.scan_record_keys(
                ctx, self.resource, read.equals, read.after, read.limit, key_prefix=read.key_prefix
            )
        )
        return tuple(keys)

    def delete_matching(self, *, index: str, equals: Mapping[str, Any]) -> None:
        """Delete every row equal on ``index``, under the lock of each row's anchor.

        Through an attribute guard ``equals`` gives the attribute, and its anchor
        must exist even when no row matches. Via the key, each matching row's
        anchor is locked (in the order ``check()`` takes), every one before any
        row, and each row still matching under those locks is deleted; a root's
        rows are their own anchors.
        """
        self._delete_matching(index, equals, purging=None)

    def purge_matching(self, *, index: str, equals: Mapping[str, Any]) -> tuple[Purge, ...]:
        """:meth:`delete_matching`, each matching row purged as :meth:`purge` purges it;
        the purges made, by key bytes."""
        purged: list[Purge] = []
        self._delete_matching(index, equals, purging=purged)
        return tuple(purged)

    def _delete_matching(
        self, index: str, equals: Mapping[str, Any], purging: list[Purge] | None
    ) -> None:
        """Delete (``purging`` ``None``) or purge into ``purging`` the rows equal on
        ``index``, under the locks :meth:`delete_matching` describes."""
        self._view.ensure_usable()
        resource = self.resource
        values = resource.index_values(index, equals)
        via = resource.guard_attribute
        if via is not None and via not in values:
            raise ValueError(
                f"delete_matching on {resource.id} must give the guard attribute {via!r}"
            )
        anchor_id = resource.guard_resource
        by_key = anchor_id is not None and via is None and not resource.is_self_anchored

        def remove(ctx: Any, driver: StorageDriver[Any], key: str) -> None:
            if purging is None:
                driver.delete_record(ctx, resource, key, UNCHECKED)
            else:
                made = driver.purge_record(ctx, resource, key, UNCHECKED)
                if made is not None:
                    purging.append(made)

        def operation(ctx: Any, driver: StorageDriver[Any]) -> None:
            if via is not None:
                self._guard(ctx, driver, self._anchor_key("", values))
            elif by_key and anchor_id is not None:
                anchor = self._view._backend.resources[anchor_id]
                keys = [row.key for row in driver.scan_records(ctx, resource, values, None, None)]
                for key in keys:  # by key bytes: the order of check()'s guards
                    driver.lock_guard(ctx, anchor, key)
                for key in keys:
                    current = driver.record_attributes(ctx, resource, key)
                    if current is not None and attributes_match(current, values):
                        remove(ctx, driver, key)
                return
            if purging is None:
                driver.delete_matching_records(ctx, resource, values)
                return
            for row in driver.scan_records(ctx, resource, values, None, None):
                remove(ctx, driver, row.key)

        self._view.run(operation)

    def history(self, key: str) -> tuple[RecordedEntry, ...]:
        """Every revision ever written under ``key``, oldest first, with when it was written."""
        self._view.ensure_usable()
        key = validate_key(key)
        rows = self._view.run(
            lambda ctx, driver: driver.record_history(ctx, self.resource, key), writes=False
        )
        return tuple(row.fresh() for row in rows)


class Streams(_Handle):
    """Append-only streams with expected-head appends."""

    __slots__ = ()

    def append(
        self, *, stream: str, expected_head: int, entries: Sequence[AppendEntry]
    ) -> tuple[StreamEntry, ...]:
        """Append ``entries`` at positions ``expected_head + 1 ...``."""
        self._view.ensure_usable()
        stream = validate_key(stream, "stream")
        validate_revision(expected_head, "expected_head")
        if not isinstance(entries, list | tuple):
            raise TypeError(f"entries must be a list, got {type(entries).__name__}")
        batch = tuple(entries)
        validate_revision(expected_head + len(batch), "the head after this append")
        for entry in batch:
            if not isinstance(entry, AppendEntry):
                raise SerializationError(f"not an AppendEntry: {type(entry).__name__}")
        ids = [entry.id for entry in batch]
        if len(set(ids)) != len(ids):
            raise ConflictError(f"duplicate stream entry identity within the batch: {ids}")

        def operation(ctx: Any, driver: StorageDriver[Any]) -> tuple[StreamEntry, ...]:
            self._guard(ctx, driver, self._anchor_key(stream, {}))
            return tuple(driver.append_stream(ctx, self.resource, stream, expected_head, batch))

        return self._view.run(operation)

    def read(
        self, *, stream: str, after: int = 0, limit: int | None = None
    ) -> tuple[StreamEntry, ...]:
        """Entries with position above ``after``, ascending; ``()`` for a missing stream."""
        self._view.ensure_usable()
        read = self.prepared_read(stream=stream, after=after, limit=limit)
        rows = self._view.run(
            lambda ctx, driver: driver.read_stream(
                ctx, self.resource, read.stream, read.after, read.limit
            ),
            writes=False,
        )
        return tuple(row.fresh() for row in rows)

    def prepared_read(self, *, stream: str, after: int = 0, limit: int | None = None) -> StreamRead:
        """:meth:`read`, validated now, to run in :meth:`View.read_together`."""
        stream = validate_key(stream, "stream")
        validate_revision(after, "after")
        validate_limit(limit)
        return StreamRead(self.resource, stream, after, limit)

    def head(self, *, stream: str) -> int:
        """The current head (0 for a missing stream)."""
        self._view.ensure_usable()
        stream = validate_key(stream, "stream")
        return self._view.run(
            lambda ctx, driver: driver.stream_head(ctx, self.resource, stream), writes=False
        )

    def delete(self, *, stream: str) -> None:
        """Remove the stream; it restarts at position 1."""
        self._view.ensure_usable()
        stream = validate_key(stream, "stream")

        def operation(ctx: Any, driver: StorageDriver[Any]) -> None:
            self._guard(ctx, driver, self._anchor_key(stream, {}))
            driver.delete_stream(ctx, self.resource, stream)

        self._view.run(operation)

    def purge(self, *, stream: str, before: int | None = None) -> Purge | None:
        """Erase the stream's entries from the inline tables and the log.

        Without ``before``: delete the stream (it restarts at position 1) and
        erase every entry it ever had. With ``before``: erase the entries at
        positions below it (and those of the stream's earlier lives); the head
        stays, :meth:`read` skips the erased positions and their ids may be
        appended again. The log keeps a stub per erased entry and one marker,
        as :meth:`Records.purge` describes. ``None`` if there was nothing to erase.
        """
        self._view.ensure_usable()
        stream = validate_key(stream, "stream")
        if before is not None:
            validate_revision(before, "before")

        def operation(ctx: Any, driver: StorageDriver[Any]) -> Purge | None:
            self._guard(ctx, driver, self._anchor_key(stream, {}))
            return driver.purge_stream(ctx, self.resource, stream, before)

        return self._view.run(operation)


class Blobs(_Handle):
    """Content written once under a key."""

    __slots__ = ()

    def put_if_absent(self, *, key: str, data: bytes, attributes: Mapping[str, Any]) -> BlobEntry:
        """Store ``data`` unless present; returns the stored blob (first attributes win)."""
        self._view.ensure_usable()
        key = validate_key(key)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"blob data must be bytes, got {type(data).__name__}")
        blob = BlobEntry(key, bytes(data), self.resource.validate_attributes(attributes))
        stored = self._view.run(lambda ctx, driver: driver.put_blob(ctx, self.resource, blob))
        return stored.fresh()

    def fetch(self, key: str) -> BlobEntry:
        """The blob; ``NotFoundError`` if missing."""
        self._view.ensure_usable()
        key = validate_key(key)
        found = self._view.run(
            lambda ctx, driver: driver.fetch_blob(ctx, self.resource, key), writes=False
        )
        if found is None:
            raise NotFoundError(
                f"blob not found: {self.resource.id}/{key}", resource=self.resource.id, key=key
            )
        return found.fresh()

    def exists(self, key: str) -> bool:
        """Whether a blob is stored under ``key``."""
        self._view.ensure_usable()
        key = validate_key(key)
        return self._view.run(
            lambda ctx, driver: driver.blob_exists(ctx, self.resource, key), writes=False
        )

    def purge(self, *, key: str) -> Purge | None:
        """Delete the blob and erase its bytes from the log, leaving a stub and a marker as
        :meth:`Records.purge` describes; ``None`` if the log held no blob under ``key``. A
        later :meth:`put_if_absent` of the key stores it anew."""
        self._view.ensure_usable()
        key = validate_key(key)
        return self._view.run(lambda ctx, driver: driver.purge_blob(ctx, self.resource, key))


def _key_prefix(key_prefix: Any) -> str | None:
    """A scan's ``key_prefix``: ``None`` or a key's text (not empty: leave it out)."""
    return None if key_prefix is None else validate_key(key_prefix, "key_prefix")


def _ordered(values: Any, what: str) -> tuple[Any, ...]:
    """A list or tuple, copied; sets, generators and mappings have no defined order."""
    if not isinstance(values, list | tuple):
        raise TypeError(f"{what} must be a list or tuple, got {type(values).__name__}")
    return tuple(values)


def _durable(record: Any) -> DurableRecord:
    if not isinstance(record, DurableRecord):
        raise SerializationError(f"record must be a DurableRecord, got {type(record).__name__}")
    return record


def _fresh(answer: Any) -> Any:
    """A prepared read's answer with entries of its own, as the single calls give them."""
    if answer is None:
        return None
    if isinstance(answer, RecordEntry):
        return answer.fresh()
    return tuple(entry.fresh() for entry in answer)
