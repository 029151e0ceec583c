"""The words of the errors the SPI's shared core raises (not a driver's).

The conformance kit asserts error types and the attributes the interfaces
specify, never message text, so a backend with a driver of its own passes it
whatever its driver's words. The messages below are the shared core's
(``Resource``, the scalars, ``View``, ``Backend``, the error classes): the
same on every backend built on it, so one backend checks them here.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import (
    Backend,
    ConditionFailedError,
    DurableRecord,
    GuardRef,
    NoRows,
    Resource,
    SerializationError,
    StreamHeadIs,
    TransactionError,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.testing.inputs import loose
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import in_thread

MAX = 2**63 - 1


@pytest.fixture
def backend() -> Backend:
    """An in-memory backend of the kit's resources with the owner's anchor row."""
    opened = InMemoryBackend(FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=opaque_record())
    return opened


def _holder(backend: Backend, key: str) -> Generator[None, None, None]:
    with backend.transaction() as view:
        view.records(WORKFLOW_STATES).insert(
            key=key, revision=1, attributes={}, record=opaque_record()
        )
        yield


def test_scopes_closed_out_of_order_or_on_another_thread_say_so(backend: Backend) -> None:
    outer, inner = _holder(backend, "a"), _holder(backend, "b")
    next(outer)
    next(inner)
    with pytest.raises(TransactionError, match="innermost first"):
        next(outer)
    with pytest.raises(TransactionError, match="rolled back"):
        next(inner)
    elsewhere = _holder(backend, "c")
    next(elsewhere)
    outcome = in_thread(lambda: next(elsewhere))
    assert isinstance(outcome.error, TransactionError)
    assert "another thread" in str(outcome.error)


def test_limits_name_the_limit(backend: Backend) -> None:
    record = opaque_record()
    view = backend.view
    states = view.records(WORKFLOW_STATES)
    wide = dict.fromkeys("abcd", "string")
    executions = view.records(EXECUTIONS)
    refusals: list[tuple[str, Callable[[], object]]] = [
        ("64-bit", lambda: StreamHeadIs(JOURNAL, OWNER, MAX + 1)),
        ("64-bit", lambda: states.insert(key="k", revision=MAX + 1, attributes={}, record=record)),
        (">= 0", lambda: states.insert(key="k", revision=-1, attributes={}, record=record)),
        ("> 0", lambda: executions.scan(index="owner", equals={"owner": OWNER}, limit=0)),
        ("NUL", lambda: states.read("a\0b")),
        ("UTF-8", lambda: states.read("\ud800")),
        ("512", lambda: states.read("x" * 513)),
        ("indexed", lambda: executions.scan(index="owner", equals={"owner": "x" * 513})),
        ("1536", lambda: Resource("r", "records", attributes=wide, indexes={"i": tuple(wide)})),
        ("empty", lambda: states.read("")),
        ("list or tuple", lambda: view.check(guards=loose(set()), conditions=[])),
    ]
    for words, call in refusals:
        with pytest.raises((ValueError, TypeError), match=words):
            call()
    with pytest.raises(SerializationError, match="deeper than 100"):
        DurableRecord("t", "0.1", _nested(101))


def test_a_condition_without_its_guard_names_the_guard_it_needs(backend: Backend) -> None:
    with pytest.raises(ValueError, match=r"GuardRef\('agent\.roots', 'owner-1'\)"):
        backend.view.check(guards=[], conditions=[StreamHeadIs(JOURNAL, OWNER, 0)])


def test_failed_conditions_and_unique_constraints_say_what_failed(backend: Backend) -> None:
    with pytest.raises(ConditionFailedError) as failed:
        backend.view.check(
            guards=[GuardRef(ROOTS, OWNER)], conditions=[StreamHeadIs(JOURNAL, OWNER, 7)]
        )
    assert str(failed.value) == f"condition failed: {JOURNAL.id}/{OWNER} expected head 7, found 0"
    items = backend.view.records(INVENTORY_ITEMS)
    attributes: dict[str, Any] = {
        "code": "c-1",
        "label": "bolt",
        "quantity": 1,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    items.insert(key="i1", revision=0, attributes=attributes, record=opaque_record())
    with pytest.raises(ConditionFailedError) as rows:
        backend.view.check(guards=[], conditions=[NoRows(INVENTORY_ITEMS, "code", {"code": "c-1"})])
    assert str(rows.value) == "condition failed: inventory.items has rows in code {'code': 'c-1'}"
    with pytest.raises(UniqueConstraintError) as unique:
        items.insert(key="i2", revision=0, attributes=attributes, record=opaque_record())
    assert str(unique.value) == "unique constraint inventory.items.unique_code failed"


def _nested(depth: int) -> dict[str, Any]:
    value: Any = []
    for _ in range(depth - 2):
        value = [value]
    return {"deep": value}
