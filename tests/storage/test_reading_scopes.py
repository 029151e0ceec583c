"""``Backend.run_reading``: a function run in one read scope, on every kind of store.

SQLite runs it without the generator context managers of ``reading()``; each case holds on
every backend alike: the function's value, its errors, a failed operation inside it, and
a read inside a transaction of the same thread.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nenjim.infrastructure.storage import Backend, DurableRecord, TransactionError
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES, WORKFLOW_STATES
from nenjim.infrastructure.storage.view import View

KEY = "wf-1"


@pytest.fixture
def backend(store_url: str) -> Iterator[Backend]:
    opened = open_backend(store_url, FIXTURE_RESOURCES)
    yield opened
    opened.close()


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.read", "0.1", {"value": value})


def _value(view: View) -> str | None:
    found = view.records(WORKFLOW_STATES).read(KEY)
    return None if found is None else str(found.record.payload["value"])


def test_a_read_gives_the_functions_value_over_committed_rows(backend: Backend) -> None:
    assert backend.run_reading(_value) is None
    backend.view.records(WORKFLOW_STATES).insert(
        key=KEY, revision=1, attributes={}, record=_record("one")
    )
    assert backend.run_reading(_value) == "one"


def test_an_error_of_the_function_is_raised_as_is_and_leaves_no_scope_open(
    backend: Backend,
) -> None:
    class _RefusedError(Exception):
        pass

    def refuse(view: View) -> None:
        _value(view)
        raise _RefusedError("no")

    with pytest.raises(_RefusedError, match="no"):
        backend.run_reading(refuse)
    assert backend.current_scope() is None
    backend.view.records(WORKFLOW_STATES).insert(
        key=KEY, revision=1, attributes={}, record=_record("after")
    )
    assert backend.run_reading(_value) == "after"


def test_an_operation_that_failed_inside_fails_the_read_even_if_caught(
    backend: Backend,
) -> None:
    def swallow(view: View) -> str:
        with pytest.raises(ZeroDivisionError):
            view.run(lambda ctx, driver: 1 // 0, writes=False)
        return "swallowed"

    with pytest.raises(TransactionError, match="an operation in it failed"):
        backend.run_reading(swallow)
    assert backend.current_scope() is None
    assert backend.run_reading(_value) is None


def test_a_read_inside_a_transaction_of_the_thread_sees_what_it_wrote(
    backend: Backend,
) -> None:
    class _UndoError(Exception):
        pass

    def write_then_read() -> str | None:
        with backend.transaction() as view:
            view.records(WORKFLOW_STATES).insert(
                key=KEY, revision=1, attributes={}, record=_record("uncommitted")
            )
            seen = backend.run_reading(_value)
            raise _UndoError(seen)

    with pytest.raises(_UndoError, match=r"^uncommitted$"):
        write_then_read()
    assert backend.run_reading(_value) is None
