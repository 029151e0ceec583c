"""Writes sent before the answers of the checks they depend on: on PostgreSQL a replace's
write goes out with its guard, row lock and unique pre-check, an append's with its guard
and head row, and on SQLite an append moves its head in the statement that checks it. A
check that then refuses the write must leave everything as it was and report the error
the checks' order puts first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from refusals import refusals_in_every_position

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConflictError,
    DurableRecord,
    NotFoundError,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.infrastructure.storage.opening import open_backend
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    FIXTURE_RESOURCES,
    JOURNAL,
    OWNER,
    ROOTS,
)

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


@pytest.mark.parametrize(
    "case",
    [
        (OWNER, 1, ["x"], ConflictError, "is at 2, expected 1"),
        (OWNER, 2, ["y", "a"], ConflictError, "duplicate stream entry identity"),
        ("fresh", 3, ["x"], ConflictError, "is at 0, expected 3"),
        ("unknown-owner", 0, ["x"], NotFoundError, "guard record not found"),
    ],
)
def test_a_refused_append_reports_its_conflict_and_writes_nothing(
    backend: Backend,
    case: tuple[str, int, list[str], type[Exception], str],
    durable_store_url: str,
) -> None:
    stream, expected_head, ids, error, message = case
    backend.view.records(ROOTS).insert(key="fresh", revision=0, attributes={}, record=_record("f"))
    journal = backend.view.streams(JOURNAL)
    journal.append(
        stream=OWNER, expected_head=0, entries=[AppendEntry(i, _record(i)) for i in "ab"]
    )
    entries = [AppendEntry(entry_id, _record(entry_id)) for entry_id in ids]
    with pytest.raises(error, match=message):
        journal.append(stream=stream, expected_head=expected_head, entries=entries)

    assert journal.head(stream=OWNER) == 2
    assert [entry.id for entry in journal.read(stream=OWNER)] == ["a", "b"]
    assert journal.head(stream="fresh") == 0
    assert journal.head(stream="unknown-owner") == 0
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok
    # The stream takes the next append where it stood.
    journal.append(stream=OWNER, expected_head=2, entries=[AppendEntry("c", _record("c"))])
    assert [entry.position for entry in journal.read(stream=OWNER)] == [1, 2, 3]


def test_refusals_in_every_position_among_accepted_writes_leave_later_writes_working(
    backend: Backend, durable_store_url: str
) -> None:
    """Refused replaces in every position among accepted ones: every accepted replace
    commits, on the same connection."""
    executions = backend.view.records(EXECUTIONS)
    revision = 0

    def accepted() -> None:
        nonlocal revision
        executions.replace(
            key="idle",
            expected_revision=revision,
            next_revision=revision + 1,
            attributes=INACTIVE,
            record=_record(f"r{revision + 1}"),
        )
        revision += 1

    def refused() -> None:
        with pytest.raises(UniqueConstraintError, match="one_active_owner"):
            executions.replace(
                key="idle",
                expected_revision=revision,
                next_revision=revision + 1,
                attributes=ACTIVE,
                record=_record("refused"),
            )

    refusals_in_every_position(accepted, refused)
    assert len(executions.history("idle")) == revision + 1 == 37
    assert audit_store(durable_store_url, FIXTURE_RESOURCES).ok
