"""Transaction boundaries (through the raw view) and the rules of nested scopes.

The nesting tests run through both Python entry points, ``with
backend.transaction()`` and ``backend.run_in_transaction(fn)``, the way the
Ruby suite ran them through the backend and the Persistence facade.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConditionFailedError,
    ConflictError,
    DurableRecord,
    GuardRef,
    NoRows,
    NotFoundError,
    SerializationError,
    TransactionError,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import (
    BackendFactory,
    StorageContract,
    ThreadOutcome,
    content_exists,
    put_content,
    start_thread,
)

_T = TypeVar("_T")

ENTRY_POINTS = ("with", "run_in_transaction")
WORKFLOW = "workflow-1"


def transact(backend: Backend, entry_point: str, body: Callable[[Any], _T]) -> _T:
    """Run ``body(view)`` in a transaction opened through ``entry_point``."""
    if entry_point == "with":
        with backend.transaction() as view:
            # Returning from inside the with-block commits (Python semantics).
            return body(view)
    result: _T = backend.run_in_transaction(body)
    return result


def _transaction_record(value: str) -> DurableRecord:
    return DurableRecord("opaque.transaction", "0.1", {"value": value})


def _active_run(key: str) -> dict[str, Any]:
    return {
        "key": key,
        "revision": 0,
        "attributes": {"owner": OWNER, "active": True},
        "record": opaque_record(),
    }


class StorageTransactionContract(StorageContract):
    """Scopes, savepoints, failed-scope and validation-first rules of a backend."""

    # 1. a failed inner scope ------------------------------------------------
    @pytest.mark.parametrize("entry_point", ENTRY_POINTS)
    def test_failed_inner_scope_rolls_back_and_reraises_before_outer_continues(
        self, backend: Backend, entry_point: str
    ) -> None:
        failure = RuntimeError("inner failure")
        keys: dict[str, str] = {}

        def inner(view: Any) -> None:
            keys["inner"] = put_content(view, "inner")
            view.records(WORKFLOW_STATES).insert(
                key=WORKFLOW, revision=1, attributes={}, record=_transaction_record("inner")
            )
            raise failure

        def outer(view: Any) -> str:
            keys["outer"] = put_content(view, "outer")
            with pytest.raises(RuntimeError) as raised:
                transact(backend, entry_point, inner)
            assert raised.value is failure
            assert content_exists(view, keys["outer"])
            assert not content_exists(view, keys["inner"])
            assert backend.view.records(WORKFLOW_STATES).read(WORKFLOW) is None
            keys["later"] = put_content(view, "later")
            return "outer_result"

        assert transact(backend, entry_point, outer) == "outer_result"
        assert content_exists(backend.view, keys["outer"])
        assert content_exists(backend.view, keys["later"])
        assert not content_exists(backend.view, keys["inner"])
        assert backend.view.records(WORKFLOW_STATES).read(WORKFLOW) is None

    # 2. normal completion ---------------------------------------------------
    @pytest.mark.parametrize("entry_point", ENTRY_POINTS)
    def test_normal_completion_commits_both_scopes_and_returns_their_values(
        self, backend: Backend, entry_point: str
    ) -> None:
        keys: dict[str, str] = {}

        def inner(view: Any) -> str:
            keys["inner"] = put_content(view, "inner")
            return "inner_result"

        def outer(view: Any) -> str:
            keys["outer"] = put_content(view, "outer")
            assert transact(backend, entry_point, inner) == "inner_result"
            return "outer_result"

        assert transact(backend, entry_point, outer) == "outer_result"
        assert content_exists(backend.view, keys["outer"])
        assert content_exists(backend.view, keys["inner"])

    # 3. an outer failure ---------------------------------------------------
    @pytest.mark.parametrize("entry_point", ENTRY_POINTS)
    def test_outer_failure_rolls_back_a_successful_inner_scope(
        self, backend: Backend, entry_point: str
    ) -> None:
        keys: dict[str, str] = {}
        failure = RuntimeError("outer failure")

        def inner(view: Any) -> str:
            keys["inner"] = put_content(view, "inner")
            return "inner_result"

        def outer(view: Any) -> None:
            keys["outer"] = put_content(view, "outer")
            assert transact(backend, entry_point, inner) == "inner_result"
            assert content_exists(view, keys["inner"])
            raise failure

        with pytest.raises(RuntimeError) as raised:
            transact(backend, entry_point, outer)
        assert raised.value is failure
        assert not content_exists(backend.view, keys["outer"])
        assert not content_exists(backend.view, keys["inner"])

    # 4. an uncaught inner error ---------------------------------------------
    @pytest.mark.parametrize("entry_point", ENTRY_POINTS)
    def test_uncaught_inner_error_escapes_and_rolls_back_both_scopes(
        self, backend: Backend, entry_point: str
    ) -> None:
        keys: dict[str, str] = {}
        failure = RuntimeError("uncaught inner failure")

        def inner(view: Any) -> None:
            keys["inner"] = put_content(view, "inner")
            raise failure

        def outer(view: Any) -> None:
            keys["outer"] = put_content(view, "outer")
            transact(backend, entry_point, inner)

        with pytest.raises(RuntimeError) as raised:
            transact(backend, entry_point, outer)
        assert raised.value is failure
        assert not content_exists(backend.view, keys["outer"])
        assert not content_exists(backend.view, keys["inner"])

    # 5. validation before any write ------------------------------------------
    def test_stream_batch_is_validated_before_any_write_without_failing_the_scope(
        self, backend: Backend
    ) -> None:
        record = DurableRecord("opaque.transaction", "0.1", {})
        valid = AppendEntry("first", record)
        not_an_entry: Any = object()
        with backend.transaction() as view:
            retained = put_content(view, "retained")
            streams = view.streams(JOURNAL)
            with pytest.raises(SerializationError):
                streams.append(stream=OWNER, expected_head=0, entries=[valid, not_an_entry])
            assert streams.head(stream=OWNER) == 0
            assert streams.read(stream=OWNER) == ()
        assert content_exists(backend.view, retained)
        appended = backend.view.streams(JOURNAL).append(
            stream=OWNER, expected_head=0, entries=[valid, AppendEntry("second", record)]
        )
        assert tuple(entry.position for entry in appended) == (1, 2)
        assert [entry.record.payload for entry in appended] == [{}, {}]

    # scope rules ------------------------------------------------------------
    def test_transaction_yields_a_view_and_run_in_transaction_returns_the_value(
        self, backend: Backend
    ) -> None:
        def body(view: Any) -> tuple[str, int]:
            entry = view.records(EXECUTIONS).insert(**_active_run("run-1"))
            return ("done", entry.revision)

        assert backend.run_in_transaction(body) == ("done", 0)
        with backend.transaction() as view:
            assert view.records(EXECUTIONS).fetch("run-1").revision == 0

    def test_exception_in_the_body_rolls_back_and_propagates_the_same_object(
        self, backend: Backend
    ) -> None:
        failure = ValueError("domain failure")

        def with_block() -> None:
            with backend.transaction() as view:
                view.records(EXECUTIONS).insert(**_active_run("run-1"))
                raise failure

        with pytest.raises(ValueError, match="domain failure") as raised:
            with_block()
        assert raised.value is failure
        assert backend.view.records(EXECUTIONS).read("run-1") is None

        def body(view: Any) -> None:
            view.records(EXECUTIONS).insert(**_active_run("run-2"))
            raise failure

        with pytest.raises(ValueError, match="domain failure") as raised_again:
            backend.run_in_transaction(body)
        assert raised_again.value is failure
        assert backend.view.records(EXECUTIONS).read("run-2") is None

    @pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
    def test_base_exceptions_roll_back_and_propagate_unchanged(
        self, backend: Backend, kind: type[BaseException]
    ) -> None:
        interrupt = kind()

        def body() -> None:
            with backend.transaction() as view:
                view.records(EXECUTIONS).insert(**_active_run("run-1"))
                raise interrupt

        with pytest.raises(kind) as raised:
            body()
        assert raised.value is interrupt
        assert backend.view.records(EXECUTIONS).read("run-1") is None
        # The scope closed cleanly: a new transaction opens and commits.
        with backend.transaction() as view:
            view.records(EXECUTIONS).insert(**_active_run("run-2"))
        assert backend.view.records(EXECUTIONS).fetch("run-2").revision == 0

    def test_closing_a_generator_that_holds_a_transaction_rolls_it_back(
        self, backend: Backend
    ) -> None:
        def holder() -> Generator[None, None, None]:
            with backend.transaction() as view:
                view.records(EXECUTIONS).insert(**_active_run("run-1"))
                yield

        generator = holder()
        next(generator)
        generator.close()  # raises GeneratorExit inside the with-block
        assert backend.view.records(EXECUTIONS).read("run-1") is None
        with backend.transaction() as view:
            view.records(EXECUTIONS).insert(**_active_run("run-2"))
        assert backend.view.records(EXECUTIONS).fetch("run-2").revision == 0

    def test_nested_transaction_in_a_failed_scope_is_refused(self, backend: Backend) -> None:
        reached_end: list[bool] = []

        def nested() -> None:
            with backend.transaction():
                pass

        def body() -> None:
            with backend.transaction() as view:
                view.records(EXECUTIONS).insert(**_active_run("run-1"))
                with pytest.raises(ConflictError):
                    view.records(EXECUTIONS).insert(**_active_run("run-1"))
                with pytest.raises(TransactionError):
                    nested()
                reached_end.append(True)

        with pytest.raises(TransactionError):
            body()
        assert reached_end == [True]
        assert backend.view.records(EXECUTIONS).read("run-1") is None

    def test_argument_and_pre_physical_errors_do_not_fail_the_scope(self, backend: Backend) -> None:
        record = opaque_record()
        not_a_record: Any = {"status": "ignored"}
        with backend.transaction() as view:
            records = view.records(EXECUTIONS)
            streams = view.streams(JOURNAL)
            records.insert(**_active_run("run-1"))
            with pytest.raises(ValueError, match=r"."):
                records.insert(
                    key="", revision=0, attributes={"owner": OWNER, "active": False}, record=record
                )
            with pytest.raises(ValueError, match=r"."):
                records.scan(index="missing", equals={"owner": OWNER})
            with pytest.raises(ValueError, match=r"."):
                streams.read(stream=OWNER, limit=0)
            with pytest.raises(TypeError):
                records.insert(
                    key="run-2",
                    revision=True,
                    attributes={"owner": OWNER, "active": False},
                    record=record,
                )
            with pytest.raises(SerializationError):
                records.insert(
                    key="run-2",
                    revision=0,
                    attributes={"owner": OWNER, "active": False},
                    record=not_a_record,
                )
            # Pre-physical conflicts: a revision that does not advance by one,
            # duplicate ids inside one batch.
            with pytest.raises(ConflictError):
                records.replace(
                    key="run-1",
                    expected_revision=0,
                    next_revision=2,
                    attributes={"owner": OWNER, "active": False},
                    record=record,
                )
            duplicate = AppendEntry("same", record)
            with pytest.raises(ConflictError):
                streams.append(stream=OWNER, expected_head=0, entries=[duplicate, duplicate])
            # A read that finds nothing succeeded; fetch raises after the read.
            assert records.read("missing") is None
            with pytest.raises(NotFoundError):
                records.fetch("missing")
            records.insert(
                key="run-2", revision=0, attributes={"owner": OWNER, "active": False}, record=record
            )
        stored = backend.view.records(EXECUTIONS)
        assert stored.fetch("run-1").revision == 0
        assert stored.fetch("run-2").revision == 0

    def test_failed_condition_check_fails_the_enclosing_scope(self, backend: Backend) -> None:
        idle = NoRows(EXECUTIONS, "owner_active", {"owner": OWNER, "active": True})
        reached_end: list[bool] = []

        def body() -> None:
            with backend.transaction() as view:
                view.records(EXECUTIONS).insert(**_active_run("run-1"))
                with pytest.raises(ConditionFailedError):
                    view.check(guards=[GuardRef(ROOTS, OWNER)], conditions=[idle])
                with pytest.raises(TransactionError):
                    view.records(EXECUTIONS).read("run-1")
                reached_end.append(True)

        with pytest.raises(TransactionError):
            body()
        assert reached_end == [True]
        assert backend.view.records(EXECUTIONS).read("run-1") is None

    def test_expected_failure_isolated_in_a_savepoint_keeps_the_outer_scope_usable(
        self, backend: Backend
    ) -> None:
        with backend.transaction() as view:
            view.records(EXECUTIONS).insert(**_active_run("run-1"))
            with pytest.raises(UniqueConstraintError), backend.transaction() as inner:
                inner.records(EXECUTIONS).insert(**_active_run("run-2"))
            # The savepoint rolled back; the outer scope is still usable.
            assert view.records(EXECUTIONS).read("run-2") is None
            view.records(WORKFLOW_STATES).insert(
                key=WORKFLOW, revision=1, attributes={}, record=_transaction_record("after")
            )
        assert backend.view.records(EXECUTIONS).fetch("run-1").revision == 0
        assert backend.view.records(EXECUTIONS).read("run-2") is None
        assert backend.view.records(WORKFLOW_STATES).fetch(WORKFLOW).revision == 1

    def test_root_handle_joins_the_innermost_scope(self, backend: Backend) -> None:
        root_workflows = backend.view.records(WORKFLOW_STATES)
        failure = RuntimeError("inner")

        def inner() -> None:
            with backend.transaction():
                root_workflows.insert(
                    key="inner", revision=1, attributes={}, record=_transaction_record("i")
                )
                raise failure

        with backend.transaction():
            root_workflows.insert(
                key="outer", revision=1, attributes={}, record=_transaction_record("o")
            )
            with pytest.raises(RuntimeError):
                inner()
            assert root_workflows.read("inner") is None
            assert root_workflows.fetch("outer").revision == 1
        assert root_workflows.fetch("outer").revision == 1
        assert root_workflows.read("inner") is None

    def test_other_threads_do_not_join_this_threads_scope(self, backend: Backend) -> None:
        failure = RuntimeError("rollback this thread only")
        joins: list[Callable[[], ThreadOutcome[object]]] = []

        def theirs() -> object:
            return backend.view.records(WORKFLOW_STATES).insert(
                key="theirs", revision=1, attributes={}, record=_transaction_record("t")
            )

        def body() -> None:
            with backend.transaction() as view:
                view.records(WORKFLOW_STATES).insert(
                    key="mine", revision=1, attributes={}, record=_transaction_record("mine")
                )
                # The other thread's root write is its own transaction; it may
                # have to wait for this one to end, so it is joined afterwards.
                joins.append(start_thread(theirs))
                raise failure

        with pytest.raises(RuntimeError):
            body()
        outcome = joins[0]()
        assert outcome.error is None
        assert backend.view.records(WORKFLOW_STATES).read("mine") is None
        assert backend.view.records(WORKFLOW_STATES).fetch("theirs").revision == 1

    def test_root_view_of_another_backend_does_not_join_this_transaction(
        self, backend: Backend, make_backend: BackendFactory
    ) -> None:
        other = make_backend(FIXTURE_RESOURCES)

        def body() -> None:
            with backend.transaction() as view:
                view.records(WORKFLOW_STATES).insert(
                    key="here", revision=1, attributes={}, record=_transaction_record("h")
                )
                other.view.records(WORKFLOW_STATES).insert(
                    key="there", revision=1, attributes={}, record=_transaction_record("t")
                )
                raise RuntimeError("roll back only this backend")

        with pytest.raises(RuntimeError):
            body()
        assert backend.view.records(WORKFLOW_STATES).read("here") is None
        assert backend.view.records(WORKFLOW_STATES).read("there") is None
        assert other.view.records(WORKFLOW_STATES).fetch("there").revision == 1

    # concurrency (atomic_resources, record_cas, stream_cas) -----------------
    @staticmethod
    def _race(backend: Backend, action: Callable[[int], object]) -> list[BaseException | None]:
        barrier = threading.Barrier(2, timeout=10)

        def contender(number: int) -> object:
            barrier.wait()
            return action(number)

        joins = [start_thread(functools.partial(contender, number)) for number in (1, 2)]
        return [join().error for join in joins]

    def test_concurrent_record_cas_writers_have_exactly_one_winner(self, backend: Backend) -> None:
        backend.view.records(WORKFLOW_STATES).insert(
            key=WORKFLOW, revision=1, attributes={}, record=_transaction_record("start")
        )

        def save(number: int) -> object:
            return backend.view.records(WORKFLOW_STATES).replace(
                key=WORKFLOW,
                expected_revision=1,
                next_revision=2,
                attributes={},
                record=_transaction_record(f"writer {number}"),
            )

        errors = self._race(backend, save)
        assert sum(error is None for error in errors) == 1
        assert all(error is None or isinstance(error, ConflictError) for error in errors)
        assert backend.view.records(WORKFLOW_STATES).fetch(WORKFLOW).revision == 2

    def test_concurrent_appends_at_the_same_head_have_exactly_one_winner(
        self, backend: Backend
    ) -> None:
        def append(number: int) -> object:
            return backend.view.streams(JOURNAL).append(
                stream=OWNER,
                expected_head=0,
                entries=[AppendEntry(f"writer-{number}", opaque_record())],
            )

        errors = self._race(backend, append)
        assert sum(error is None for error in errors) == 1
        assert all(error is None or isinstance(error, ConflictError) for error in errors)
        assert backend.view.streams(JOURNAL).head(stream=OWNER) == 1

    def test_concurrent_admissions_for_one_owner_have_exactly_one_winner(
        self, backend: Backend
    ) -> None:
        def admit(number: int) -> object:
            with backend.transaction() as view:
                return view.records(EXECUTIONS).insert(**_active_run(f"run-{number}"))

        errors = self._race(backend, admit)
        assert sum(error is None for error in errors) == 1
        assert all(error is None or isinstance(error, UniqueConstraintError) for error in errors)
        active = backend.view.records(EXECUTIONS).scan(
            index="owner_active", equals={"owner": OWNER, "active": True}
        )
        assert len(active) == 1

    # -- atomic: one physical step for operations and their decoding ------------------

    def test_atomic_on_the_root_view_is_its_own_transaction(self, backend: Backend) -> None:
        records = backend.view.records(WORKFLOW_STATES)

        def write_then_fail_decoding(view: Any) -> None:
            view.records(WORKFLOW_STATES).insert(
                key="atomic", revision=1, attributes={}, record=opaque_record()
            )
            raise SerializationError("the stored row does not decode")

        with pytest.raises(SerializationError):
            backend.view.atomic(write_then_fail_decoding)
        assert records.read("atomic") is None
        assert backend.view.atomic(lambda view: "value") == "value"

    def test_a_failure_inside_atomic_fails_the_enclosing_scope(self, backend: Backend) -> None:
        records = backend.view.records(WORKFLOW_STATES)

        def body(view: Any) -> None:
            view.records(WORKFLOW_STATES).insert(
                key="before", revision=1, attributes={}, record=opaque_record()
            )
            with pytest.raises(SerializationError):
                # A root-view atomic joins the thread's scope, like a root handle.
                backend.view.atomic(lambda inner: _raise(SerializationError("bad row")))
            view.records(WORKFLOW_STATES).read("before")  # the scope is failed now

        with pytest.raises(TransactionError):
            backend.run_in_transaction(body)
        assert records.read("before") is None


def _raise(error: Exception) -> None:
    raise error
