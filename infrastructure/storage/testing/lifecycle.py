"""A backend's life: closing it, and scopes closed in the wrong order.

After ``close()`` every operation is a ``BackendClosedError`` (a
``StorageError``), through the root view and through views of scopes still
open. Scopes close innermost first; a scope that closes while a scope nested
in it is still open (two generators, each holding one) raises
``TransactionError`` and rolls back itself and every scope nested in it, so
the store is exactly as it was before either began. A scope closed on
another thread than the one that opened it (a generator holding it, resumed
or closed elsewhere) is refused the same way: ``TransactionError``, and it
and the scopes nested in it are rolled back.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    BackendClosedError,
    GuardRef,
    NoRows,
    StorageError,
    TransactionError,
    View,
)
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    EXECUTIONS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import StorageContract, in_thread

BASE = "base"


def _insert(view: View, key: str) -> None:
    view.records(WORKFLOW_STATES).insert(key=key, revision=1, attributes={}, record=opaque_record())


def _stored(backend: Backend, *keys: str) -> list[str]:
    records = backend.view.records(WORKFLOW_STATES)
    return [key for key in keys if records.read(key) is not None]


def _holder(backend: Backend, key: str, views: list[View]) -> Generator[None, None, None]:
    """A generator that opens a scope, writes ``key`` and keeps the scope open at ``yield``."""
    with backend.transaction() as view:
        views.append(view)
        _insert(view, key)
        yield


def _operations(view: View) -> dict[str, Callable[[], object]]:
    record = opaque_record()
    return {
        "records.read": lambda: view.records(WORKFLOW_STATES).read(BASE),
        "records.fetch": lambda: view.records(WORKFLOW_STATES).fetch(BASE),
        "records.insert": lambda: _insert(view, "late"),
        "records.replace": lambda: view.records(WORKFLOW_STATES).replace(
            key=BASE, expected_revision=1, next_revision=2, attributes={}, record=record
        ),
        "records.delete": lambda: view.records(WORKFLOW_STATES).delete(key=BASE),
        "records.scan": lambda: view.records(EXECUTIONS).scan(
            index="owner", equals={"owner": OWNER}
        ),
        "records.scan_keys": lambda: view.records(EXECUTIONS).scan_keys(
            index="owner", equals={"owner": OWNER}
        ),
        "records.delete_matching": lambda: view.records(EXECUTIONS).delete_matching(
            index="owner", equals={"owner": OWNER}
        ),
        "records.history": lambda: view.records(WORKFLOW_STATES).history(BASE),
        "streams.append": lambda: view.streams(JOURNAL).append(
            stream=OWNER, expected_head=0, entries=[AppendEntry("e1", record)]
        ),
        "streams.read": lambda: view.streams(JOURNAL).read(stream=OWNER),
        "streams.head": lambda: view.streams(JOURNAL).head(stream=OWNER),
        "streams.delete": lambda: view.streams(JOURNAL).delete(stream=OWNER),
        "blobs.put_if_absent": lambda: view.blobs(CONTENT_BLOBS).put_if_absent(
            key="blob", data=b"x", attributes={"canonicalization_version": 1}
        ),
        "blobs.fetch": lambda: view.blobs(CONTENT_BLOBS).fetch("blob"),
        "blobs.exists": lambda: view.blobs(CONTENT_BLOBS).exists("blob"),
        "check": lambda: view.check(
            guards=[GuardRef(ROOTS, OWNER)],
            conditions=[NoRows(EXECUTIONS, "owner", {"owner": OWNER})],
        ),
        "atomic": lambda: view.atomic(lambda inner: inner.records(WORKFLOW_STATES).read(BASE)),
    }


OPERATIONS = (
    "records.read",
    "records.fetch",
    "records.insert",
    "records.replace",
    "records.delete",
    "records.scan",
    "records.scan_keys",
    "records.delete_matching",
    "records.history",
    "streams.append",
    "streams.read",
    "streams.head",
    "streams.delete",
    "blobs.put_if_absent",
    "blobs.fetch",
    "blobs.exists",
    "check",
    "atomic",
)


class StorageLifecycleContract(StorageContract):
    """``close()`` and the order in which scopes close."""

    @pytest.fixture(autouse=True)
    def _base_row(self, backend: Backend) -> None:
        _insert(backend.view, BASE)

    # close() ------------------------------------------------------------------

    @pytest.mark.parametrize("operation", OPERATIONS)
    def test_every_root_view_operation_after_close_is_refused(
        self, backend: Backend, operation: str
    ) -> None:
        backend.close()
        with pytest.raises(BackendClosedError) as raised:
            _operations(backend.view)[operation]()
        assert isinstance(raised.value, StorageError)

    def test_transactions_and_handles_after_close_are_refused_and_close_is_idempotent(
        self, backend: Backend
    ) -> None:
        backend.close()
        backend.close()
        with pytest.raises(BackendClosedError), backend.transaction():
            pass
        with pytest.raises(BackendClosedError):
            backend.run_in_transaction(lambda view: None)

    @pytest.mark.parametrize("operation", OPERATIONS)
    def test_a_scope_open_when_another_thread_closes_the_backend_refuses_further_work(
        self, backend: Backend, operation: str
    ) -> None:
        def body() -> None:
            with backend.transaction() as view:
                _insert(view, "in-flight")
                assert in_thread(backend.close).error is None
                _operations(view)[operation]()

        with pytest.raises(BackendClosedError):
            body()

    def test_a_refused_operation_fails_its_scope_even_if_the_error_is_caught(
        self, backend: Backend
    ) -> None:
        def body() -> None:
            with backend.transaction() as view:
                _insert(view, "in-flight")
                backend.close()
                with pytest.raises(BackendClosedError):
                    view.records(WORKFLOW_STATES).read(BASE)

        with pytest.raises(TransactionError):
            body()

    # scopes closed out of order ----------------------------------------------

    def test_closing_an_outer_scope_before_its_nested_scope_rolls_both_back(
        self, backend: Backend
    ) -> None:
        views: list[View] = []
        outer, inner = _holder(backend, "a", views), _holder(backend, "b", views)
        next(outer)
        next(inner)
        with pytest.raises(TransactionError):
            outer.close()
        inner.close()  # its scope is already rolled back: nothing left to undo
        assert _stored(backend, BASE, "a", "b") == [BASE]
        for view in views:
            with pytest.raises(TransactionError):
                view.records(WORKFLOW_STATES).read(BASE)
        self._assert_usable(backend)

    def test_finishing_an_outer_scope_before_its_nested_scope_commits_neither(
        self, backend: Backend
    ) -> None:
        views: list[View] = []
        outer, inner = _holder(backend, "a", views), _holder(backend, "b", views)
        next(outer)
        next(inner)
        with pytest.raises(TransactionError):
            next(outer)
        with pytest.raises(TransactionError):
            next(inner)  # leaving its block normally would commit: refused
        assert _stored(backend, BASE, "a", "b") == [BASE]
        self._assert_usable(backend)

    def test_a_caller_scope_closing_under_a_generator_scope_commits_nothing(
        self, backend: Backend
    ) -> None:
        views: list[View] = []
        inner = _holder(backend, "b", views)

        def body() -> None:
            with backend.transaction() as view:
                _insert(view, "a")
                next(inner)

        with pytest.raises(TransactionError):
            body()
        inner.close()
        assert _stored(backend, BASE, "a", "b") == [BASE]
        self._assert_usable(backend)

    def test_out_of_order_close_undoes_only_the_scopes_it_closes(self, backend: Backend) -> None:
        views: list[View] = []
        middle, inner = _holder(backend, "b", views), _holder(backend, "c", views)
        with backend.transaction() as view:
            _insert(view, "a")
            next(middle)
            next(inner)
            with pytest.raises(TransactionError):
                middle.close()
            inner.close()
            # The enclosing scope is intact and goes on.
            assert _stored(backend, "a", "b", "c") == ["a"]
            _insert(view, "d")
        assert _stored(backend, BASE, "a", "b", "c", "d") == [BASE, "a", "d"]

    def test_an_exception_leaving_an_abandoned_scope_propagates_unchanged(
        self, backend: Backend
    ) -> None:
        class StopError(Exception):
            pass

        views: list[View] = []
        outer, inner = _holder(backend, "a", views), _holder(backend, "b", views)
        next(outer)
        next(inner)
        with pytest.raises(TransactionError):
            outer.close()
        stop = StopError()
        with pytest.raises(StopError) as raised:
            inner.throw(stop)
        assert raised.value is stop
        assert _stored(backend, BASE, "a", "b") == [BASE]

    # scopes closed on another thread -------------------------------------------

    @pytest.mark.parametrize("how", ["finish", "close"])
    def test_a_scope_closed_on_another_thread_is_refused_and_rolled_back(
        self, backend: Backend, how: str
    ) -> None:
        views: list[View] = []
        holder = _holder(backend, "a", views)
        next(holder)
        finish = (lambda: next(holder)) if how == "finish" else holder.close
        outcome = in_thread(finish)
        assert isinstance(outcome.error, TransactionError), outcome.error
        assert _stored(backend, BASE, "a") == [BASE]
        with pytest.raises(TransactionError):
            views[0].records(WORKFLOW_STATES).read(BASE)
        assert backend.current_scope() is None
        self._assert_usable(backend)
        # Nothing of the scope is left held (a lock, a writer lock, a connection).
        assert in_thread(lambda: _insert(backend.view, "elsewhere")).error is None
        assert _stored(backend, "elsewhere") == ["elsewhere"]

    def test_a_scope_closed_on_another_thread_rolls_back_the_scopes_nested_in_it(
        self, backend: Backend
    ) -> None:
        views: list[View] = []
        outer, inner = _holder(backend, "a", views), _holder(backend, "b", views)
        next(outer)
        next(inner)
        outcome = in_thread(lambda: next(outer))
        assert isinstance(outcome.error, TransactionError), outcome.error
        with pytest.raises(TransactionError):
            next(inner)
        assert _stored(backend, BASE, "a", "b") == [BASE]
        assert backend.current_scope() is None
        self._assert_usable(backend)

    def test_a_nested_scope_closed_on_another_thread_leaves_its_parent_going_on(
        self, backend: Backend
    ) -> None:
        views: list[View] = []
        inner = _holder(backend, "b", views)
        with backend.transaction() as view:
            _insert(view, "a")
            next(inner)
            outcome = in_thread(lambda: next(inner))
            assert isinstance(outcome.error, TransactionError), outcome.error
            assert _stored(backend, "a", "b") == ["a"]
            _insert(view, "c")
        assert _stored(backend, BASE, "a", "b", "c") == [BASE, "a", "c"]

    @staticmethod
    def _assert_usable(backend: Backend) -> None:
        with backend.transaction() as view:
            with backend.transaction() as nested:
                _insert(nested, "after")
            assert view.records(WORKFLOW_STATES).fetch("after").revision == 1
        assert _stored(backend, "after") == ["after"]
