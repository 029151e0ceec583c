"""``Backend``: resources, capabilities, the root view and transaction scopes.

A scope is one physical transaction (or savepoint) bound to the thread that
opened it. Each thread keeps a stack of its open scopes per backend: a nested
``transaction()`` becomes a savepoint of the innermost one, and a root-view
operation joins the innermost one (root handle routing). An exception raised
by a physical operation marks its scope failed: every later use raises
``TransactionError`` and the scope rolls back even if the caller caught the
error (PostgreSQL aborts a transaction after a failed statement, so going on
in place is not portable).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import MappingProxyType
from typing import Any, TypeVar

from nenjim.infrastructure.storage.driver import StorageDriver
from nenjim.infrastructure.storage.errors import (
    BackendClosedError,
    TransactionError,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.view import View

_T = TypeVar("_T")

REQUIRED_CAPABILITIES: Mapping[str, Any] = MappingProxyType(
    {
        "spi_version": 2,
        "atomic_resources": True,
        "record_cas": True,
        "stream_cas": True,
        "conditional_unique": True,
        "guarded_checks": True,
        "nested_savepoints": True,
    }
)


class Scope:
    """One open transaction or savepoint of a backend, owned by one thread.

    ``manager`` is the driver's context manager for it: the backend exits it
    (commit or roll back) when the scope closes. A scope is ``abandoned``
    when an enclosing scope closed first and rolled it back with itself.
    """

    def __init__(
        self,
        backend: Backend,
        context: Any,
        parent: Scope | None,
        manager: AbstractContextManager[Any],
        *,
        read_only: bool = False,
    ) -> None:
        self.backend = backend
        self.context = context
        self.parent = parent
        self.manager = manager
        self.thread = threading.get_ident()
        self.closed = False
        self.failed = False
        self.abandoned = False
        self.read_only = read_only
        """A :meth:`Backend.reading` scope: its operations may only read."""

    def ensure_usable(self) -> None:
        """Raise ``BackendClosedError`` or ``TransactionError`` unless usable now.

        A closed backend also fails the scope, so it rolls back even if the
        caller swallows the error.
        """
        # One test for the usual case (every operation asks, some twice): a usable scope.
        if not (
            self.backend._closed
            or self.abandoned
            or self.closed
            or self.failed
            or self.thread != threading.get_ident()
        ):
            return
        if self.backend.closed:
            self.failed = True
            self.backend.ensure_open()
        if self.thread != threading.get_ident():
            raise TransactionError("transaction view used from another thread")
        if self.abandoned:
            raise TransactionError(
                "transaction view used after its scope was rolled back: an enclosing "
                "scope closed before it"
            )
        if self.closed:
            raise TransactionError("transaction view used after its scope closed")
        if self.failed:
            raise TransactionError(
                "transaction scope failed: an operation raised; roll back and retry, "
                "or isolate expected failures in a nested transaction"
            )

    def run(self, operation: Callable[[Any], _T]) -> _T:
        """Run a physical operation; any exception fails the scope."""
        self.ensure_usable()
        try:
            return operation(self.context)
        except BaseException:
            self.failed = True
            raise

    def run_on(self, operation: Callable[[Any, Any], _T], driver: Any) -> _T:
        """:meth:`run` of ``operation(context, driver)``, without a closure per operation."""
        self.ensure_usable()
        try:
            return operation(self.context, driver)
        except BaseException:
            self.failed = True
            raise


class Backend:
    """Base of the SPI's backends: a resource catalog over a physical driver."""

    def __init__(self, resources: Sequence[Resource], driver: StorageDriver[Any]) -> None:
        self._resources = _catalog(resources)
        self._driver = driver
        self._local = threading.local()
        self._root = View(self, None)
        self._closed = False
        self._resolved: dict[tuple[str, str | Resource], Resource] = {}

    @property
    def resources(self) -> Mapping[str, Resource]:
        """The registered resources by id."""
        return self._resources

    @property
    def capabilities(self) -> Mapping[str, Any]:
        """What this backend guarantees; the SPI requires :data:`REQUIRED_CAPABILITIES`."""
        return REQUIRED_CAPABILITIES

    @property
    def view(self) -> View:
        """The root view: each operation runs atomically, or joins the thread's transaction."""
        return self._root

    lone_writes_skip_transaction = False
    """Whether a root-view write that is one statement goes to the database as that
    statement alone, without ``BEGIN`` and ``COMMIT``: then it costs less than the same
    write in a transaction (PostgreSQL). Elsewhere a transaction, grouped with other
    threads' (SQLite), costs less than the root view's lone reads and write."""

    @property
    def driver(self) -> StorageDriver[Any]:
        """The physical driver (for administration and tests)."""
        return self._driver

    def close(self) -> None:
        """Take no more work and release the driver's connections (idempotent).

        Every later operation, through the root view or a view of a scope
        still open on any thread, raises ``BackendClosedError``. A
        transaction another thread is running is not cut short: its
        connection is released when it ends.
        """
        self._closed = True
        self._driver.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def ensure_open(self) -> None:
        """Raise ``BackendClosedError`` after :meth:`close`."""
        if self._closed:
            raise BackendClosedError("storage backend used after close()")

    def transaction(self) -> AbstractContextManager[View]:
        """A transaction scope, or a savepoint when this thread already has one open.

        Leaving the block normally commits; any exception rolls back and
        propagates unchanged. A scope failed by an operation rolls back and
        raises ``TransactionError`` even if the block swallowed the error.
        Scopes close innermost first: closing one while a scope nested in it
        is still open (two generators each holding one) raises
        ``TransactionError`` and rolls back both. A scope closes on the thread
        that opened it: closing it on another (a generator holding it,
        resumed or closed there) raises ``TransactionError`` and rolls it back
        with the scopes nested in it.
        """
        return self._scope(self._driver.transaction)

    def reading(self) -> AbstractContextManager[View]:
        """A scope for reads only, as :meth:`transaction` but for what it may skip: a
        backend may run each of its statements as a transaction of its own, all seeing
        committed state as statements of a READ COMMITTED transaction do (its driver's
        :meth:`~StorageDriver.reads`; inside this thread's open transaction, a savepoint of
        it). A write in it is refused with ``TransactionError`` before it runs (it could
        commit alone); a transaction opened inside it may write."""
        if self.current_scope() is not None:
            return self._scope(self._driver.transaction, read_only=True)
        driver = self._driver
        return self._scope(lambda _: driver.reads(), read_only=True)

    def run_reading(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` in a :meth:`reading` scope, queued behind this process's writes
        (:meth:`serialized`); its value. Inside a scope of this thread it joins it as a
        savepoint, as :meth:`reading` does."""
        with self.serialized(), self.reading() as view:
            return function(view)

    @contextmanager
    def _scope(
        self, opener: Callable[[Any], AbstractContextManager[Any]], *, read_only: bool = False
    ) -> Iterator[View]:
        """A scope whose driver context ``opener(outer context or None)`` opens and ends
        (``read_only``: a :meth:`reading` scope)."""
        stack = self._stack()
        parent = stack[-1] if stack else None
        if parent is not None:
            parent.ensure_usable()
        self.ensure_open()
        manager = opener(None if parent is None else parent.context)
        scope = Scope(self, manager.__enter__(), parent, manager, read_only=read_only)
        stack.append(scope)
        try:
            yield View(self, scope)
        except BaseException as error:
            close_scope(stack, scope, error)
            raise
        close_scope(stack, scope, None)

    def run_alone(
        self, operation: Callable[[Any, StorageDriver[Any]], _T], *, writes: bool = True
    ) -> _T:
        """Run one physical operation of the root view in a transaction of its own.

        A backend may share that transaction with other threads' lone
        operations (group commit), as long as each one commits or fails as if
        it ran alone. ``writes=False``: the operation only reads and locks.
        """
        with self.transaction() as view:
            return view.run(operation)

    def read_alone(self, operation: Callable[[Any, StorageDriver[Any]], _T]) -> _T:
        """One root-view read (``read_record``, ``scan_records`` or ``scan_record_keys`` of
        the driver, each one statement of the SQL drivers, or ``read_together``, one
        statement a read) outside any transaction of this thread. A backend may send it
        without a transaction around it: a statement reads what was committed when it
        started, as it would first in a transaction: it runs in the driver's
        :meth:`~StorageDriver.reads`."""
        self.ensure_open()
        driver = self._driver
        with driver.reads() as context:
            return operation(context, driver)

    def run_in_transaction(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` inside one transaction; returns its value."""
        with self.transaction() as view:
            return function(view)

    def run_grouped(self, function: Callable[[View], _T]) -> _T:
        """``function(view)`` as one transaction, which a backend may share with other
        threads' (group commit) as long as it commits or fails as if it ran alone; its value.

        Inside a transaction of this thread it is a savepoint of it, as :meth:`transaction`.
        ``function`` may run more than once before it commits (a group-committed batch runs
        again when one of its items failed): it must not act outside the transaction.
        """
        return self.run_in_transaction(function)

    def serialized(self) -> AbstractContextManager[Any]:
        """A block during which this process starts no other write of this backend (on a
        backend with one writer: waiting threads queue here instead of polling its lock)."""
        return nullcontext()

    def in_turn(self) -> AbstractContextManager[Any]:
        """A block of reads and the work on their answers that runs one at a time with the
        process's other blocks in turn and lone reads, where reads side by side cost more
        than in turn (SQLite, see its backend); elsewhere nothing. Writes neither wait for
        it nor hold it up. Re-entrant in a thread; a block must not wait for another
        thread's reads (it would wait forever)."""
        return nullcontext()

    def current_scope(self) -> Scope | None:
        """The innermost scope this thread has open on this backend."""
        stack: list[Scope] | None = getattr(self._local, "stack", None)
        return stack[-1] if stack else None

    def resolve(self, reference: Any, kind: str) -> Resource:
        """A registered resource of ``kind``, by id or by the identical object."""
        # The catalog never changes: a reference resolved once (the very Resource
        # object, or the id) resolves the same again, so every view's handle of it
        # is found by one lookup.
        if reference.__class__ is str or reference.__class__ is Resource:
            known = self._resolved.get((kind, reference))
            if known is not None:
                return known
            found = self._resolve(reference, kind)
            self._resolved[(kind, reference)] = found
            return found
        return self._resolve(reference, kind)

    def _resolve(self, reference: Any, kind: str) -> Resource:
        if isinstance(reference, Resource):
            registered = self._resources.get(reference.id)
            if registered is not reference:
                raise UnsupportedBackendError(
                    f"resource {reference.id!r} is not the object registered with this backend"
                )
        elif isinstance(reference, str):
            registered = self._resources.get(reference)
            if registered is None:
                raise UnsupportedBackendError(f"unknown resource {reference!r}")
        else:
            raise UnsupportedBackendError(
                f"a resource is a Resource or its id, got {type(reference).__name__}"
            )
        if registered.kind != kind:
            raise UnsupportedBackendError(
                f"resource {registered.id!r} is {registered.kind}, not {kind}"
            )
        return registered

    def _stack(self) -> list[Scope]:
        stack: list[Scope] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack


def close_scope(stack: list[Scope], scope: Scope, error: BaseException | None) -> None:
    """End ``scope``: commit it, or roll it back when ``error`` is set or it failed."""
    if scope.abandoned:
        # An enclosing scope closed first and already rolled this one back.
        scope.closed = True
        if error is None:
            raise TransactionError(
                "transaction scope was rolled back when an enclosing scope closed before it; "
                "nothing it wrote was committed"
            )
        return
    if scope.thread != threading.get_ident():
        # The opener's stack, connection and locks are its own: undo the scope
        # and every scope nested in it, and refuse.
        nested = stack[stack.index(scope) + 1 :]
        del stack[stack.index(scope) :]
        failure = TransactionError(
            "transaction scope closed on another thread than the one that opened it; "
            f"it and the {len(nested)} scope(s) nested in it were rolled back"
        )
        for inner in nested:
            inner.abandoned = inner.closed = True
        scope.closed = True
        _roll_back([*reversed(nested), scope], failure)
        raise failure
    if stack[-1] is not scope:
        nested = stack[stack.index(scope) + 1 :]
        del stack[stack.index(scope) :]
        failure = TransactionError(
            f"transaction scopes close innermost first: a scope closed while {len(nested)} "
            "scope(s) nested in it were still open; all of them were rolled back"
        )
        for inner in nested:
            inner.abandoned = inner.closed = True
        scope.closed = True
        _roll_back([*reversed(nested), scope], failure)
        raise failure
    stack.pop()
    scope.closed = True
    if error is not None:
        scope.manager.__exit__(type(error), error, error.__traceback__)
    elif scope.failed:
        failure = TransactionError("transaction rolled back: an operation in it failed")
        _roll_back([scope], failure)
        raise failure
    else:
        scope.manager.__exit__(None, None, None)


def _roll_back(scopes: Sequence[Scope], failure: TransactionError) -> None:
    """Roll back each scope, innermost first; a rollback that itself fails is raised."""
    problem: BaseException | None = None
    for scope in scopes:
        try:
            scope.manager.__exit__(TransactionError, failure, None)
        except BaseException as raised:
            if raised is not failure and problem is None:
                problem = raised
    if problem is not None:
        raise problem


def validate_capabilities(backend: Any) -> None:
    """Refuse a backend whose capabilities differ from the required ones."""
    capabilities = getattr(backend, "capabilities", None)
    if not isinstance(capabilities, Mapping):
        raise UnsupportedBackendError("backend has no capabilities mapping")
    wrong = sorted(
        key
        for key, value in REQUIRED_CAPABILITIES.items()
        if key not in capabilities
        or capabilities[key] != value
        or type(capabilities[key]) is not type(value)
    )
    if wrong:
        raise UnsupportedBackendError(f"backend lacks required capabilities: {', '.join(wrong)}")
    for method in ("view", "transaction"):
        if not hasattr(backend, method):
            raise UnsupportedBackendError(f"backend has no {method}")


def _catalog(resources: Any) -> Mapping[str, Resource]:
    if isinstance(resources, Resource) or not isinstance(resources, Sequence):
        raise UnsupportedBackendError("resources must be a sequence of Resource objects")
    catalog: dict[str, Resource] = {}
    for resource in resources:
        if not isinstance(resource, Resource):
            raise UnsupportedBackendError(f"not a Resource: {resource!r}")
        if resource.id in catalog:
            raise UnsupportedBackendError(f"duplicate resource id {resource.id!r}")
        catalog[resource.id] = resource
    for resource in catalog.values():
        anchor = resource.guard_resource
        if anchor is not None and (anchor not in catalog or catalog[anchor].kind != "records"):
            raise UnsupportedBackendError(
                f"resource {resource.id!r} guards on {anchor!r}, which is not a registered "
                "records resource"
            )
    return MappingProxyType(catalog)
