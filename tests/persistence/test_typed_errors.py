"""Misuse that used to escape as a raw Python error gets the typed error it should, on every
backend: deep nesting, text given as bytes, content that is not JSON, and handoff chains
whose metadata is not what ``handoff_result`` can follow."""

from __future__ import annotations

from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence import errors as perr
from nenjim.infrastructure.persistence import Persistence

AGENT = "agent-1"


def _deep(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("depth", [101, 100_000])
def test_deeply_nested_values_are_typed_errors_not_recursion_errors(
    persistence: Persistence, depth: int
) -> None:
    with pytest.raises(ValueError, match="deeper than 100"):
        AgentRoot.create(AGENT, definition_id="a", metadata=_deep(depth))
    with pytest.raises(perr.SerializationError, match="deeper than 100"):
        persistence.contents.put_json(_deep(depth))
    with pytest.raises(perr.SerializationError, match="deeper than 100"):
        persistence.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": _deep(depth), "phase": None}
        )
    assert persistence.workflow_states.load("wf") is None


def test_the_deepest_json_content_allowed_round_trips(persistence: Persistence) -> None:
    identity = persistence.contents.put_json(_deep(100))
    assert persistence.contents.fetch_json(identity) == _deep(100)


@pytest.mark.parametrize(
    "content",
    [b"not json", b"{", b"\xff\xfe", b"NaN", b'{"x": Infinity}', b"[" * 101 + b"]" * 101],
    ids=["text", "truncated", "not UTF-8", "NaN", "Infinity", "too deep"],
)
def test_fetch_json_of_content_that_is_not_json_is_a_serialization_error(
    persistence: Persistence, content: bytes
) -> None:
    identity = persistence.contents.put(content, canonicalization_version=1)
    with pytest.raises(perr.SerializationError, match=identity):
        persistence.contents.fetch_json(identity)


def test_put_text_of_bytes_is_a_type_error(persistence: Persistence) -> None:
    with pytest.raises(TypeError, match="str"):
        persistence.contents.put_text(b"x")  # type: ignore[arg-type]


def test_workflow_save_with_a_text_revision_is_a_type_error(persistence: Persistence) -> None:
    snapshot = {"fields": {}, "phase": None}
    persistence.workflow_states.save("wf", expected_revision=None, snapshot=snapshot)
    with pytest.raises(TypeError, match="expected_revision must be an int or None, got str"):
        persistence.workflow_states.save(
            "wf",
            expected_revision="1",  # type: ignore[arg-type]
            snapshot=snapshot,
        )


# handoff_result ------------------------------------------------------------------


def _run(
    persistence: Persistence, execution_id: str, *, status: str, **metadata: Any
) -> AgentExecution:
    root = persistence.agents.load(AGENT)
    run = persistence.executions.create_active(
        AgentExecution.start(execution_id, agent_id=AGENT, base=root, metadata=metadata)
    )
    return persistence.executions.save(
        execution_id, expected_revision=0, execution=run.evolve(status=status)
    )


@pytest.fixture
def agent(persistence: Persistence) -> Persistence:
    """A Persistence with the Agent ``agent-1``."""
    persistence.agents.create(AgentRoot.create(AGENT, definition_id="a"))
    return persistence


def test_handoff_result_does_not_follow_a_source_that_is_still_active(agent: Persistence) -> None:
    _run(
        agent,
        "exec-1",
        status="active",
        main_agent_id=AGENT,
        handoff_target_execution_id="exec-reserved",
    )
    result = agent.handoff_result("exec-1", main_agent_id=AGENT)
    assert (result["execution_id"], result["status"]) == ("exec-1", "active")
    assert "reserved" not in result


@pytest.mark.parametrize("target", [5, True, ["exec-2"], {"id": "exec-2"}, "", "a\ud800"])
def test_handoff_result_refuses_a_target_that_is_not_an_execution_id(
    agent: Persistence, target: Any
) -> None:
    try:
        _run(agent, "exec-1", status="completed", handoff_target_execution_id=target)
    except ValueError:
        return  # the value itself refuses it (text must be valid UTF-8): never stored
    with pytest.raises(perr.SerializationError, match="handoff_target_execution_id"):
        agent.handoff_result("exec-1")


@pytest.mark.parametrize("anchor", [7, ["agent-1"]])
def test_handoff_result_refuses_an_anchor_that_is_not_an_agent_id(
    agent: Persistence, anchor: Any
) -> None:
    _run(agent, "exec-1", status="completed", main_agent_id=anchor)
    with pytest.raises(perr.SerializationError, match="main_agent_id"):
        agent.handoff_result("exec-1", main_agent_id=AGENT)
