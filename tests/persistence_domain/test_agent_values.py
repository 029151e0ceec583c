"""Agent durable values: factories, transitions, validation and immutability."""

from __future__ import annotations

import dataclasses
import enum
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from nenjim.domain.agents import (
    ACTIVE_STATUSES,
    EXECUTION_STATUSES,
    TERMINAL_STATUSES,
    AgentExecution,
    AgentJournalRecord,
    AgentRoot,
    HandoffState,
    LLMCallRecord,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def root(**changes: Any) -> AgentRoot:
    return dataclasses.replace(
        AgentRoot.create("agent-1", definition_id="def", created_at=T0), **changes
    )


def approval(execution_id: str = "run-1", **changes: Any) -> dict[str, Any]:
    item = {
        "tool_invocation_id": "inv-1",
        "tool_call_id": None,
        "tool_name": "lookup",
        "arguments": {"q": "x"},
        "facts": {},
        "reason": None,
        "origin": "policy",
        "metadata": {},
    }
    request = {"id": "req-1", "execution_id": execution_id, "items": [item], "created_at": "t"}
    request.update(changes)
    return request


def llm_call(**changes: Any) -> LLMCallRecord:
    values: dict[str, Any] = {
        "llm_call_id": "call-1",
        "execution_id": "run-1",
        "sequence": 1,
        "status": "completed",
        "manifest_ref": "sha256:m",
        "output_ref": None,
        "error_ref": None,
        "usage_ref": None,
        "started_at": T0,
        "completed_at": None,
        "metadata": {},
    }
    values.update(changes)
    return LLMCallRecord(**values)


class TestAgentRoot:
    def test_create_starts_idle_at_revision_zero(self) -> None:
        value = AgentRoot.create("agent-1", definition_id="def", created_at=T0)
        assert value.agent_revision == 0
        assert value.agent_definition_version == "1"
        assert (value.context_revision, value.journal_position, value.transcript_generation) == (
            0,
            0,
            0,
        )
        assert value.lifecycle_status == "idle"
        assert value.created_at == value.updated_at == T0
        assert value.metadata == {}

    def test_create_defaults_to_now_in_utc(self) -> None:
        before = datetime.now(UTC)
        value = AgentRoot.create("agent-1", definition_id="def", definition_version="7")
        assert before <= value.created_at <= datetime.now(UTC)
        assert value.created_at.tzinfo is UTC
        assert value.agent_definition_version == "7"

    def test_evolve_advances_revision_and_refreshes_updated_at(self) -> None:
        first = root()
        second = first.evolve(journal_position=2, lifecycle_status="active")
        assert second.agent_revision == 1
        assert (second.journal_position, second.lifecycle_status) == (2, "active")
        assert second.updated_at > first.updated_at
        assert second.created_at == first.created_at
        assert first.agent_revision == 0
        assert first.journal_position == 0
        assert second.evolve().agent_revision == 2

    def test_evolve_accepts_an_explicit_updated_at(self) -> None:
        later = T0 + timedelta(hours=1)
        assert root().evolve(updated_at=later).updated_at == later

    @pytest.mark.parametrize("name", ["agent_id", "agent_revision", "created_at"])
    def test_evolve_refuses_identity_and_revision(self, name: str) -> None:
        with pytest.raises(ValueError, match=name):
            root().evolve(**{name: getattr(root(), name)})

    def test_evolve_refuses_unknown_fields(self) -> None:
        with pytest.raises(TypeError):
            root().evolve(colour="blue")

    def test_evolve_validates_types(self) -> None:
        with pytest.raises(TypeError):
            root().evolve(journal_position="2")
        with pytest.raises(ValueError, match="lifecycle_status"):
            root().evolve(lifecycle_status="sleeping")

    @pytest.mark.parametrize(
        ("name", "value", "error"),
        [
            ("agent_id", "", ValueError),
            ("agent_id", "a\0b", ValueError),
            ("agent_id", 7, TypeError),
            ("agent_id", "\ud800", ValueError),
            ("agent_definition_id", None, TypeError),
            ("agent_definition_version", 1, TypeError),
            ("agent_revision", True, TypeError),
            ("agent_revision", -1, ValueError),
            ("context_revision", 1.0, TypeError),
            ("journal_position", None, TypeError),
            ("transcript_generation", -3, ValueError),
            ("lifecycle_status", "unknown", ValueError),
            ("created_at", "2024-05-01T12:00:00Z", TypeError),
            ("updated_at", datetime(2024, 5, 1), ValueError),
            ("metadata", [], TypeError),
            ("metadata", {1: "x"}, TypeError),
            ("metadata", {"n": 2**53}, ValueError),
            ("metadata", {"f": float("nan")}, ValueError),
            ("metadata", {"f": -0.0}, ValueError),
            ("metadata", {"s": {1, 2}}, TypeError),
        ],
    )
    def test_fields_are_validated(self, name: str, value: object, error: type[Exception]) -> None:
        with pytest.raises(error):
            root(**{name: value})

    def test_timestamps_are_converted_to_utc(self) -> None:
        plus_two = timezone(timedelta(hours=2))
        value = root(created_at=datetime(2024, 5, 1, 14, 0, tzinfo=plus_two))
        assert value.created_at == T0
        assert value.created_at.tzinfo is UTC

    def test_metadata_is_a_deep_read_only_copy(self) -> None:
        source: dict[str, Any] = {"labels": ["a"], "nested": {"k": 1}}
        value = AgentRoot.create("agent-1", definition_id="d", metadata=source)
        source["labels"].append("b")
        source["new"] = True
        assert value.metadata == {"labels": ("a",), "nested": {"k": 1}}
        with pytest.raises(TypeError):
            value.metadata["new"] = 1  # type: ignore[index]
        with pytest.raises(TypeError):
            value.metadata["nested"]["k"] = 2

    def test_values_are_frozen_equal_and_hashable(self) -> None:
        value = root(metadata={"a": [1]})
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.agent_revision = 5  # type: ignore[misc]
        twin = root(metadata={"a": (1,)})
        assert value == twin
        assert hash(value) == hash(twin)
        assert value != root(metadata={"a": [2]})

    def test_str_enum_text_becomes_plain_str(self) -> None:
        class Status(enum.StrEnum):
            ACTIVE = "active"

        value = root(lifecycle_status=Status.ACTIVE)
        assert type(value.lifecycle_status) is str
        assert value.lifecycle_status == "active"


class TestAgentJournalRecord:
    def test_create_has_no_sequence_and_defaults(self) -> None:
        record = AgentJournalRecord.create(
            "rec-1", agent_id="agent-1", kind="message", occurred_at=T0
        )
        assert record.sequence is None
        assert record.content_ref is None
        assert (record.channel, record.visibility) == ("agent", "agent")
        assert (record.context_generation, record.context_candidate) == (0, False)
        assert record.occurred_at == T0
        assert record.metadata == {}

    def test_with_sequence_returns_a_copy(self) -> None:
        record = AgentJournalRecord.create("rec-1", agent_id="agent-1", kind="message")
        appended = record.with_sequence(3)
        assert appended.sequence == 3
        assert record.sequence is None
        assert dataclasses.replace(appended, sequence=None) == record

    @pytest.mark.parametrize("sequence", [0, -1, True, "1"])
    def test_with_sequence_needs_a_positive_int(self, sequence: object) -> None:
        record = AgentJournalRecord.create("rec-1", agent_id="agent-1", kind="message")
        with pytest.raises((TypeError, ValueError)):
            record.with_sequence(sequence)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("record_id", ""),
            ("agent_id", None),
            ("kind", ""),
            ("channel", None),
            ("visibility", 3),
            ("role", 1),
            ("content_ref", b"sha"),
            ("context_generation", -1),
            ("context_candidate", 1),
            ("occurred_at", "2024-05-01"),
            ("metadata", []),
        ],
    )
    def test_fields_are_validated(self, name: str, value: Any) -> None:
        with pytest.raises((TypeError, ValueError)):
            AgentJournalRecord.create("rec-1", agent_id="agent-1", kind="message", **{name: value})


class TestLLMCallRecord:
    def test_valid_call(self) -> None:
        call = llm_call(completed_at=T0 + timedelta(seconds=1))
        assert call.completed_at == T0 + timedelta(seconds=1)

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("sequence", 0),
            ("status", "running"),
            ("manifest_ref", None),
            ("started_at", None),
            ("completed_at", "later"),
        ],
    )
    def test_fields_are_validated(self, name: str, value: object) -> None:
        with pytest.raises((TypeError, ValueError)):
            llm_call(**{name: value})


class TestAgentExecution:
    def test_start_copies_the_base_root(self) -> None:
        base = root(agent_revision=4, context_revision=2, journal_position=9)
        run = AgentExecution.start("run-1", agent_id="agent-1", base=base, created_at=T0)
        assert run.execution_revision == 0
        assert (run.status, run.phase) == ("preparing", "preparing")
        assert (run.base_agent_revision, run.base_context_revision) == (4, 2)
        assert run.base_journal_position == 9
        assert run.working_records == ()
        assert run.llm_calls == ()
        assert run.approval_request is None
        assert (run.result_ref, run.error_ref, run.terminal_reason) == (None, None, None)
        assert run.created_at == run.updated_at == T0
        assert run.is_active

    def test_start_keeps_working_records_as_a_tuple(self) -> None:
        record = AgentJournalRecord.create("rec-1", agent_id="agent-1", kind="input_received")
        run = AgentExecution.start(
            "run-1", agent_id="agent-1", base=root(), working_records=[record]
        )
        assert run.working_records == (record,)

    def test_start_needs_the_base_of_the_same_agent(self) -> None:
        with pytest.raises(ValueError, match="agent_id"):
            AgentExecution.start("run-1", agent_id="agent-2", base=root())
        with pytest.raises(TypeError):
            AgentExecution.start("run-1", agent_id="agent-1", base="agent-1")  # type: ignore[arg-type]

    def test_evolve_advances_revision(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root(), created_at=T0)
        done = run.evolve(status="completed", result_ref="sha256:r")
        assert done.execution_revision == 1
        assert done.updated_at > run.updated_at
        assert (done.status, done.result_ref) == ("completed", "sha256:r")
        assert run.status == "preparing"

    @pytest.mark.parametrize("name", ["execution_id", "agent_id", "execution_revision"])
    def test_evolve_refuses_identity_and_revision(self, name: str) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        with pytest.raises(ValueError, match=name):
            run.evolve(**{name: getattr(run, name)})

    @pytest.mark.parametrize("status", sorted(EXECUTION_STATUSES))
    def test_is_active_means_not_terminal(self, status: str) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root()).evolve(status=status)
        assert run.is_active == (status in ACTIVE_STATUSES)
        assert run.is_terminal == (status in TERMINAL_STATUSES)
        assert run.is_active != run.is_terminal

    def test_statuses(self) -> None:
        assert {"preparing", "active", "suspended"} == ACTIVE_STATUSES
        assert {"completed", "failed", "cancelled"} == TERMINAL_STATUSES

    def test_unknown_status_is_refused(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        with pytest.raises(ValueError, match="status"):
            run.evolve(status="handed_over")

    def test_working_records_belong_to_the_agent_and_run(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        other_agent = AgentJournalRecord.create("r", agent_id="agent-2", kind="k")
        other_run = AgentJournalRecord.create("r", agent_id="agent-1", kind="k", execution_id="x")
        own = AgentJournalRecord.create("r", agent_id="agent-1", kind="k", execution_id="run-1")
        with pytest.raises(ValueError, match="Agent"):
            run.evolve(working_records=(other_agent,))
        with pytest.raises(ValueError, match="execution"):
            run.evolve(working_records=(other_run,))
        with pytest.raises(TypeError):
            run.evolve(working_records=("r",))
        with pytest.raises(TypeError):
            run.evolve(working_records=own)
        assert run.evolve(working_records=[own]).working_records == (own,)

    def test_llm_calls_belong_to_the_run(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        assert run.evolve(llm_calls=[llm_call()]).llm_calls == (llm_call(),)
        with pytest.raises(ValueError, match="execution"):
            run.evolve(llm_calls=[llm_call(execution_id="run-2")])

    def test_approval_request_is_checked_and_read_only(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        waiting = run.evolve(status="suspended", approval_request=approval(approved=True))
        assert waiting.approval_request is not None
        assert waiting.approval_request["items"][0]["tool_name"] == "lookup"
        with pytest.raises(TypeError):
            waiting.approval_request["id"] = "other"  # type: ignore[index]

    @pytest.mark.parametrize(
        "request_value",
        [
            approval(execution_id="run-2"),
            approval(items=[]),
            approval(items="x"),
            approval(items=["x"]),
            approval(approved="yes"),
            approval(id=""),
            approval(extra=1),
            {"id": "req-1", "execution_id": "run-1", "items": []},
            approval(items=[{**approval()["items"][0], "tool_name": None}]),
            approval(items=[{**approval()["items"][0], "arguments": []}]),
            approval(items=[{**approval()["items"][0], "unknown": 1}]),
            "approve",
        ],
    )
    def test_invalid_approval_requests_are_refused(self, request_value: object) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root())
        with pytest.raises((TypeError, ValueError)):
            run.evolve(approval_request=request_value)

    def test_executions_are_hashable(self) -> None:
        run = AgentExecution.start("run-1", agent_id="agent-1", base=root(), created_at=T0)
        assert hash(run) == hash(dataclasses.replace(run))


class TestHandoffState:
    def test_create_starts_stable_at_revision_one(self) -> None:
        hand = HandoffState.create("main", active_agent_id="main", created_at=T0)
        assert hand.handoff_revision == 1
        assert hand.phase == "stable"
        assert hand.pending_target_execution_id is None
        assert hand.created_at == hand.updated_at == T0

    def test_evolve_advances_revision(self) -> None:
        hand = HandoffState.create("main", active_agent_id="main", created_at=T0)
        moved = hand.evolve(
            active_agent_id="target",
            phase="target_pending",
            pending_source_execution_id="src",
            pending_target_execution_id="dst",
        )
        assert moved.handoff_revision == 2
        assert moved.active_agent_id == "target"
        assert moved.updated_at > hand.updated_at
        assert hand.active_agent_id == "main"

    @pytest.mark.parametrize("name", ["main_agent_id", "handoff_revision", "created_at"])
    def test_evolve_refuses_identity_and_revision(self, name: str) -> None:
        hand = HandoffState.create("main", active_agent_id="main")
        with pytest.raises(ValueError, match=name):
            hand.evolve(**{name: getattr(hand, name)})

    @pytest.mark.parametrize("phase", ["target_pending", "target_active"])
    def test_an_inflight_handoff_names_its_target(self, phase: str) -> None:
        with pytest.raises(ValueError, match="pending_target_execution_id"):
            HandoffState.create("main", active_agent_id="t", phase=phase)
        hand = HandoffState.create(
            "main", active_agent_id="t", phase=phase, pending_target_execution_id="dst"
        )
        assert hand.phase == phase

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("active_agent_id", ""),
            ("active_agent_id", None),
            ("phase", "moving"),
            ("active_handoff_context_ref", 5),
            ("metadata", "x"),
        ],
    )
    def test_fields_are_validated(self, name: str, value: object) -> None:
        values: dict[str, Any] = {"active_agent_id": "main", name: value}
        with pytest.raises((TypeError, ValueError)):
            HandoffState.create("main", **values)

    def test_revision_is_positive(self) -> None:
        hand = HandoffState.create("main", active_agent_id="main")
        with pytest.raises(ValueError, match="handoff_revision"):
            dataclasses.replace(hand, handoff_revision=0)
