"""No durable domain value can be changed after it is built: not a field, not a new one.

Each value type is a frozen dataclass with slots: assigning or deleting any
of its fields, or adding an attribute, raises ``FrozenInstanceError`` (an
``AttributeError``) and leaves the value exactly as it was; its collections
are tuples and read-only mappings all the way down. A new state is made with
``evolve`` (or ``with_sequence``), which returns another value.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime
from typing import Any

import pytest

from nenjim.domain.agents import (
    AgentExecution,
    AgentJournalRecord,
    AgentRoot,
    HandoffState,
    LLMCallRecord,
)
from nenjim.domain.persistence.repositories import Revision
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.domain.workflows import WorkflowState

AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _values() -> dict[str, Any]:
    """One value of every durable type, each with every collection field filled."""
    root = AgentRoot.create("agent-1", definition_id="d", metadata={"m": [1, {"k": "v"}]})
    record = AgentJournalRecord.create(
        "r1", agent_id="agent-1", kind="message", metadata={"tags": ["a"]}
    )
    call = LLMCallRecord(
        llm_call_id="call-1",
        execution_id="run-1",
        sequence=1,
        status="completed",
        manifest_ref="sha256:" + "0" * 64,
        output_ref=None,
        error_ref=None,
        usage_ref=None,
        started_at=AT,
        completed_at=AT,
        metadata={"model": "m"},
    )
    execution = AgentExecution.start(
        "run-1", agent_id="agent-1", base=root, working_records=[record], metadata={"x": [1]}
    ).evolve(
        llm_calls=(call,),
        approval_request={
            "id": "approval-1",
            "execution_id": "run-1",
            "created_at": "2024-05-01T12:00:00Z",
            "items": [
                {
                    "tool_invocation_id": "t1",
                    "tool_call_id": None,
                    "tool_name": "search",
                    "arguments": {"q": "x"},
                    "facts": {},
                    "reason": None,
                    "origin": "model",
                    "metadata": {},
                }
            ],
        },
    )
    return {
        "AgentRoot": root,
        "AgentJournalRecord": record,
        "appended AgentJournalRecord": record.with_sequence(3),
        "LLMCallRecord": call,
        "AgentExecution": execution,
        "HandoffState": HandoffState.create(
            "agent-1", active_agent_id="agent-2", metadata={"h": 1}
        ),
        "TeamRoot": TeamRoot.create("team-1", definition_id="t", metadata={"t": [1]}),
        "TeamExecution": TeamExecution.start(
            "team-run-1",
            team_id="team-1",
            coordinator={"agent": "a"},
            tasks=[{"id": "task-1"}],
            workers=["w1"],
            assignments=[{"task": "task-1", "worker": "w1"}],
        ),
        "WorkflowState": WorkflowState("wf-1", 1, {"fields": {"step": 1}, "phase": None}),
        "Revision": Revision(1, root, AT),
    }


FIELDS = [
    (kind, field.name) for kind, value in _values().items() for field in dataclasses.fields(value)
]


@pytest.mark.parametrize(("kind", "name"), FIELDS, ids=str)
def test_no_field_can_be_assigned(kind: str, name: str) -> None:
    value = _values()[kind]
    held, text = getattr(value, name), repr(value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, held)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, object())
    assert getattr(value, name) is held
    assert repr(value) == text


@pytest.mark.parametrize(("kind", "name"), FIELDS, ids=str)
def test_no_field_can_be_deleted(kind: str, name: str) -> None:
    value = _values()[kind]
    held, text = getattr(value, name), repr(value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, name)
    assert getattr(value, name) is held
    assert repr(value) == text


@pytest.mark.parametrize("kind", list(_values()))
def test_no_attribute_can_be_added_and_there_is_no_instance_dict(kind: str) -> None:
    value = _values()[kind]
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.extra = 1
    with pytest.raises(AttributeError):
        del value.extra
    with pytest.raises(TypeError):
        vars(value)


def _containers(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every mapping and sequence reachable from ``value``'s fields, with its path."""
    found: list[tuple[str, Any]] = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            found += _containers(getattr(value, field.name), f"{path}.{field.name}")
    elif hasattr(value, "keys"):
        found.append((path, value))
        for key, child in value.items():
            found += _containers(child, f"{path}.{key}")
    elif isinstance(value, tuple | list):
        found.append((path, value))
        for index, child in enumerate(value):
            found += _containers(child, f"{path}[{index}]")
    return found


# Workflow snapshots are handed out as plain dicts and lists by design (they compare
# equal to the plain input and every load is a fresh copy), so they are left out.
CONTAINERS = [
    (kind, path)
    for kind, value in _values().items()
    if kind != "WorkflowState"
    for path, _ in _containers(value, kind)
]


@pytest.mark.parametrize(("kind", "path"), CONTAINERS, ids=str)
def test_every_collection_inside_is_read_only(kind: str, path: str) -> None:
    container = dict(_containers(_values()[kind], kind))[path]
    assert not isinstance(container, list | dict), f"{path} is a {type(container).__name__}"
    if hasattr(container, "keys"):
        with pytest.raises(TypeError):
            container["new"] = 1
        for key in list(container):
            with pytest.raises(TypeError):
                del container[key]
    else:
        assert isinstance(container, tuple)


def test_the_collections_were_found() -> None:
    """The walk above reaches the nested ones (so the test above cannot pass vacuously)."""
    paths = {path for _, path in CONTAINERS}
    assert {
        "AgentRoot.metadata.m[1]",
        "AgentExecution.approval_request.items[0].arguments",
        "AgentExecution.working_records[0].metadata.tags",
        "AgentExecution.llm_calls[0].metadata",
        "TeamExecution.assignments[0]",
        "HandoffState.metadata",
        "Revision.value.metadata.m",
    } <= paths


@pytest.mark.parametrize("kind", list(_values()))
def test_a_copy_is_the_value_itself_and_a_pickle_rebuilds_an_equal_one(kind: str) -> None:
    """Nothing in a value can change, so copying shares it; pickling (to another
    process) sends its fields and rebuilds it through its checks."""
    value = _values()[kind]
    assert copy.copy(value) is value
    assert copy.deepcopy(value) is value
    assert copy.deepcopy({"held": [value]})["held"][0] is value
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        rebuilt = pickle.loads(pickle.dumps(value, protocol))
        assert type(rebuilt) is type(value)
        assert rebuilt == value
        assert repr(rebuilt) == repr(value)


def test_a_new_state_is_another_value() -> None:
    values = _values()
    root = values["AgentRoot"]
    evolved = root.evolve(lifecycle_status="active")
    assert (root.agent_revision, root.lifecycle_status) == (0, "idle")
    assert (evolved.agent_revision, evolved.lifecycle_status) == (1, "active")
    record = values["AgentJournalRecord"]
    assert record.with_sequence(2).sequence == 2
    assert record.sequence is None
