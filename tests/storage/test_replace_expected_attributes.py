"""``replace(expected_attributes=...)``: ``None`` or a mapping, never another falsy value.

``None`` and ``{}`` expect nothing. Anything else that is not a mapping —
``[]``, ``0``, ``""``, ``False`` included, which are as falsy as ``{}`` — is
a ``TypeError`` before any work, on every backend, and the row is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nenjim.infrastructure.storage import Backend, DurableRecord
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    OWNER,
    ROOTS,
)

INACTIVE = {"owner": OWNER, "active": False}


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.replace", "0.1", {"value": value})


@pytest.fixture
def backend(store_url: str) -> Iterator[Backend]:
    opened = open_backend(store_url, FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    opened.view.records(EXECUTIONS).insert(
        key="run", revision=0, attributes=INACTIVE, record=_record("0")
    )
    yield opened
    opened.close()


def _replace(backend: Backend, expected_attributes: Any) -> int:
    entry = backend.view.records(EXECUTIONS).replace(
        key="run",
        expected_revision=0,
        next_revision=1,
        attributes=INACTIVE,
        record=_record("1"),
        expected_attributes=expected_attributes,
    )
    return entry.revision


@pytest.mark.parametrize("nothing", [None, {}], ids=repr)
def test_none_and_an_empty_mapping_expect_nothing(backend: Backend, nothing: Any) -> None:
    assert _replace(backend, nothing) == 1


@pytest.mark.parametrize("value", [[], 0, "", False, (), set(), [("active", False)]], ids=repr)
def test_a_non_mapping_is_a_type_error_and_changes_nothing(backend: Backend, value: Any) -> None:
    with pytest.raises(TypeError, match=f"mapping, got {type(value).__name__}"):
        _replace(backend, value)
    stored = backend.view.records(EXECUTIONS).fetch("run")
    assert (stored.revision, stored.record) == (0, _record("0"))
