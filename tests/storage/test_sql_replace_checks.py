"""A replace's checks and its write: on PostgreSQL the write goes out with the checks,
before their answers; a check that then refuses it must leave the row as it was and
report the error the checks' order puts first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infrastructure.storage import (
    Backend,
    ConflictError,
    DurableRecord,
    NotFoundError,
    UniqueConstraintError,
)
from infrastructure.storage.audit import audit_store
from infrastructure.storage.opening import open_backend
from infrastructure.storage.testing.resources import EXECUTIONS, FIXTURE_RESOURCES, OWNER, ROOTS

ACTIVE = {"owner": OWNER, "active": True}
INACTIVE = {"owner": OWNER, "active": False}


def _record(value: str) -> DurableRecord:
    return DurableRecord("test.replace", "0.1", {"value": value})


@pytest.fixture
def backend(durable_store_url: str) -> Iterator[Backend]:
    opened = open_backend(durable_store_url, FIXTURE_RESOURCES)
    opened.view.records(ROOTS).insert(key=OWNER, revision=0, attributes={}, record=_record("r"))
    executions = opened.view.records(EXECUTIONS)
    executions.insert(key="active", revision=0, attributes=ACTIVE, record=_record("a"))
    executions.insert(key="idle", revision=0, attributes=INACTIVE, record=_record("i"))
    yield opened
    opened.close()


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"attributes": ACTIVE}, UniqueConstraintError, "one_active_owner"),
        ({"attributes": ACTIVE, "expected_revision": 3}, ConflictError, "is at 0, expected 3"),
        ({"attributes": ACTIVE, "key": "missing"}, NotFoundError, "record not found"),
        ({"attributes": {"owner": "other", "active": False}}, ConflictError, "immutable"),
        ({"expected_attributes": {"active": True}}, ConflictError, "expected differs"),
    ],
)
def test_a_refused_replace_reports_the_first_failed_check_and_changes_nothing(
    backend: Backend,
    changes: dict[str, object],
    error: type[Exception],
    message: str,
    durable_store_url: str,
) -> None:
    executions = backend.view.records(EXECUTIONS)
    arguments: dict[str, object] = {
        "key": "idle",
        "expected_revision": 0,
        "attributes": INACTIVE,
        "record": _record("new"),
        "expected_attributes": None,
    }
    arguments.update(changes)
    arguments["next_revision"] = int(arguments["expected_revision"]) + 1  # type: ignore[call-overload]
    with pytest.raises(error, match=message):
        executions.replace(**arguments)  # type: ignore[arg-type]

    idle = executions.fetch("idle")
    assert (idle.revision, dict(idle.attributes), idle.record) == (0, INACTIVE, _record("i"))
    assert len(executions.history("idle")) == 1
    assert executions.read("missing") is None
    # A replace that passes every check still goes through afterwards.
    executions.replace(
        key="idle", expected_revision=0, next_revision=1, attributes=INACTIVE, record=_record("n")
    )
    assert [entry.revision for entry in executions.history("idle")] == [0, 1]
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok
