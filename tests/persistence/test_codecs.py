"""Record codecs: round trips, envelope and payload checks, entry cross-checks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from nenjim.domain.agents import (
    AgentExecution,
    AgentJournalRecord,
    AgentRoot,
    HandoffState,
    LLMCallRecord,
)
from nenjim.domain.persistence.errors import SerializationError
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.domain.workflows import WorkflowState
from nenjim.infrastructure.persistence import codecs
from nenjim.infrastructure.persistence.codec_support import RecordFormat
from nenjim.infrastructure.storage import DurableRecord, RecordEntry, StreamEntry
from nenjim.infrastructure.storage import SerializationError as StorageSerializationError

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def agent_root() -> AgentRoot:
    return AgentRoot.create(
        "agent-1",
        definition_id="assistant",
        definition_version="3",
        metadata={"labels": ["a", "b"], "ratio": 0.25, "nested": {"none": None}},
        created_at=T0,
    ).evolve(journal_position=2, lifecycle_status="active", updated_at=T1)


def journal_record() -> AgentJournalRecord:
    return AgentJournalRecord.create(
        "rec-3",
        agent_id="agent-1",
        kind="tool_result",
        content_ref="sha256:c",
        channel="tool",
        role="tool",
        execution_id="run-1",
        llm_call_id="call-1",
        parent_id="rec-2",
        causation_id="rec-1",
        visibility="agent",
        context_generation=2,
        context_candidate=True,
        occurred_at=T0,
        metadata={"tool_call_id": "tc-1"},
    ).with_sequence(3)


def agent_execution() -> AgentExecution:
    base = agent_root()
    input_record = AgentJournalRecord.create(
        "rec-in", agent_id="agent-1", kind="input_received", channel="external", occurred_at=T0
    )
    call = LLMCallRecord(
        llm_call_id="call-1",
        execution_id="run-1",
        sequence=1,
        status="completed",
        manifest_ref="sha256:m",
        output_ref="sha256:o",
        error_ref=None,
        usage_ref="sha256:u",
        started_at=T0,
        completed_at=T1,
        metadata={"model": "m"},
    )
    request = {
        "id": "req-1",
        "execution_id": "run-1",
        "created_at": "2024-05-01T12:05:00.000000Z",
        "approved": False,
        "items": [
            {
                "tool_invocation_id": "inv-1",
                "tool_call_id": "tc-1",
                "tool_name": "delete",
                "arguments": {"path": "/tmp"},
                "facts": {"risk": "high"},
                "reason": None,
                "origin": "policy",
                "metadata": {},
            }
        ],
    }
    run = AgentExecution.start(
        "run-1", agent_id="agent-1", base=base, working_records=[input_record], created_at=T0
    )
    return run.evolve(
        status="suspended",
        phase="approval",
        llm_calls=[call],
        working_records=[input_record, dataclasses.replace(journal_record(), sequence=None)],
        approval_request=request,
        metadata={"current_input_ref": "sha256:i"},
        updated_at=T1,
    )


def workflow_state() -> WorkflowState:
    return WorkflowState(
        "wf-1",
        2,
        {"fields": {"value": 1, "items": [1.5, "x", None, {"ok": True}]}, "phase": "pause"},
    )


def handoff_state() -> HandoffState:
    return HandoffState.create(
        "main", active_agent_id="main", metadata={"chain": ["main"]}, created_at=T0
    ).evolve(
        active_agent_id="target",
        active_handoff_context_ref="sha256:h",
        phase="target_pending",
        pending_source_execution_id="src-run",
        pending_target_execution_id="dst-run",
        updated_at=T1,
    )


def team_root() -> TeamRoot:
    return TeamRoot.create(
        "team-1", definition_id="crew", metadata={"size": 2}, created_at=T0
    ).evolve(lifecycle_status="active", updated_at=T1)


def team_execution() -> TeamExecution:
    return TeamExecution.start(
        "team-run-1",
        team_id="team-1",
        phase="coordinator",
        input_ref="sha256:in",
        coordinator={"agent_id": "coord", "state": "reserved"},
        tasks=[{"id": "t1"}],
        workers=[{"index": 0, "agent_id": "w0"}],
        assignments=[{"task": "t1", "worker": 0}],
        metadata={"cancel_requested": False},
        created_at=T0,
    ).evolve(status="active", updated_at=T1)


def encode_workflow(state: WorkflowState) -> DurableRecord:
    return codecs.encode_workflow_state(
        state.workflow_instance_id,
        workflow_revision=state.workflow_revision,
        snapshot=state.snapshot,
    )


@dataclass(frozen=True)
class Case:
    """One record type under test."""

    fmt: RecordFormat
    make: Callable[[], Any]
    encode: Callable[[Any], DurableRecord]
    decode: Callable[..., Any]
    entry: Callable[[Any, DurableRecord], RecordEntry | StreamEntry]
    wrong_types: dict[str, object]
    expectations: dict[str, object]
    extra_mismatches: Callable[[Any], list[dict[str, Any]]] = field(default=lambda entry: [])

    def __str__(self) -> str:
        return self.fmt.record_type


def record_entry(key: str, revision: str, attributes: Callable[[Any], dict[str, Any]]) -> Any:
    def build(value: Any, record: DurableRecord) -> RecordEntry:
        return RecordEntry(getattr(value, key), getattr(value, revision), attributes(value), record)

    return build


CASES = [
    Case(
        codecs.AGENT_ROOT,
        agent_root,
        codecs.encode_agent_root,
        codecs.decode_agent_root,
        record_entry("agent_id", "agent_revision", lambda v: {}),
        wrong_types={
            "agent_id": 7,
            "agent_definition_version": 3,
            "agent_revision": "1",
            "context_revision": True,
            "journal_position": -1,
            "lifecycle_status": "sleeping",
            "transcript_generation": 1.5,
            "metadata": [],
            "created_at": 1714564800,
        },
        expectations={"agent_id": "agent-2", "agent_revision": 0},
    ),
    Case(
        codecs.AGENT_EXECUTION,
        agent_execution,
        codecs.encode_agent_execution,
        codecs.decode_agent_execution,
        record_entry("execution_id", "execution_revision", codecs.agent_execution_attributes),
        wrong_types={
            "execution_id": None,
            "agent_id": "",
            "execution_revision": "1",
            "status": "running",
            "phase": "",
            "base_journal_position": False,
            "working_records": {},
            "llm_calls": "calls",
            "approval_request": [],
            "result_ref": 5,
            "terminal_reason": {},
            "metadata": None,
            "updated_at": "yesterday",
        },
        expectations={
            "execution_id": "run-2",
            "agent_id": "agent-2",
            "execution_revision": 0,
            "active": False,
        },
        extra_mismatches=lambda entry: [
            {"attributes": {**entry.attributes, "owner": "agent-2"}},
            {"attributes": {**entry.attributes, "active": not entry.attributes["active"]}},
        ],
    ),
    Case(
        codecs.JOURNAL_RECORD,
        journal_record,
        codecs.encode_journal_record,
        codecs.decode_journal_record,
        lambda value, record: StreamEntry(value.sequence, value.record_id, record),
        wrong_types={
            "record_id": "",
            "agent_id": None,
            "sequence": 0,
            "execution_id": 1,
            "kind": None,
            "channel": "",
            "visibility": 1,
            "context_generation": "2",
            "context_candidate": 1,
            "metadata": "m",
            "occurred_at": None,
        },
        expectations={"agent_id": "agent-2", "sequence": 4},
    ),
    Case(
        codecs.WORKFLOW_STATE,
        workflow_state,
        encode_workflow,
        codecs.decode_workflow_state,
        record_entry("workflow_instance_id", "workflow_revision", lambda v: {}),
        wrong_types={
            "workflow_instance_id": 1,
            "workflow_revision": 0,
            "snapshot": [],
        },
        expectations={"workflow_instance_id": "wf-2", "workflow_revision": 1},
    ),
    Case(
        codecs.HANDOFF_STATE,
        handoff_state,
        codecs.encode_handoff_state,
        codecs.decode_handoff_state,
        record_entry("main_agent_id", "handoff_revision", codecs.handoff_state_attributes),
        wrong_types={
            "main_agent_id": "",
            "handoff_revision": 0,
            "active_agent_id": None,
            "phase": "moving",
            "pending_target_execution_id": None,
            "metadata": [],
        },
        expectations={"main_agent_id": "other", "handoff_revision": 1},
    ),
    Case(
        codecs.TEAM_ROOT,
        team_root,
        codecs.encode_team_root,
        codecs.decode_team_root,
        record_entry("team_id", "team_revision", lambda v: {}),
        wrong_types={
            "team_id": None,
            "team_definition_version": 1,
            "team_revision": -1,
            "lifecycle_status": "suspended",
            "metadata": "x",
        },
        expectations={"team_id": "team-2", "team_revision": 0},
    ),
    Case(
        codecs.TEAM_EXECUTION,
        team_execution,
        codecs.encode_team_execution,
        codecs.decode_team_execution,
        record_entry("team_execution_id", "execution_revision", codecs.team_execution_attributes),
        wrong_types={
            "team_execution_id": "",
            "team_id": 1,
            "execution_revision": None,
            "status": "done",
            "coordinator": [],
            "tasks": {},
            "workers": None,
            "assignments": "a",
            "input_ref": 3,
        },
        expectations={
            "team_execution_id": "team-run-2",
            "team_id": "team-2",
            "execution_revision": 0,
            "active": False,
        },
        extra_mismatches=lambda entry: [
            {"attributes": {**entry.attributes, "owner": "team-2"}},
            {"attributes": {**entry.attributes, "active": False}},
        ],
    ),
]


def _drop(key: str, payload: dict[str, Any]) -> None:
    del payload[key]


def _put(key: str, value: object, payload: dict[str, Any]) -> None:
    payload[key] = value


def tampered(case: Case, change: Callable[[dict[str, Any]], None]) -> DurableRecord:
    payload = case.encode(case.make()).payload
    change(payload)
    return DurableRecord(case.fmt.record_type, case.fmt.format_version, payload)


@pytest.fixture(params=CASES, ids=str)
def case(request: pytest.FixtureRequest) -> Case:
    result: Case = request.param
    return result


@pytest.fixture(params=[c for c in CASES if c.fmt.schema.timestamps], ids=str)
def timed_case(request: pytest.FixtureRequest) -> Case:
    result: Case = request.param
    return result


class TestEveryRecordType:
    def test_round_trip_of_the_bare_record(self, case: Case) -> None:
        value = case.make()
        assert case.decode(case.encode(value)) == value

    def test_round_trip_through_the_storage_entry(self, case: Case) -> None:
        value = case.make()
        record = case.encode(value)
        assert case.decode(case.entry(value, record)) == value
        assert case.decode(case.entry(value, record), **_matching(case, value)) == value

    def test_envelope_and_payload_keys(self, case: Case) -> None:
        value = case.make()
        record = case.encode(value)
        assert (record.record_type, record.format_version) == (
            case.fmt.record_type,
            case.fmt.format_version,
        )
        assert set(record.payload) == set(case.fmt.schema.keys)
        assert set(case.fmt.schema.keys) == {f.name for f in dataclasses.fields(value)}

    def test_encoding_is_deterministic(self, case: Case) -> None:
        assert case.encode(case.make()) == case.encode(case.make())

    @pytest.mark.parametrize("record_type", ["phronomy.other", "unrelated.envelope"])
    def test_wrong_record_type(self, case: Case, record_type: str) -> None:
        payload = case.encode(case.make()).payload
        with pytest.raises(SerializationError, match="record type"):
            case.decode(DurableRecord(record_type, case.fmt.format_version, payload))

    @pytest.mark.parametrize("version", ["0.2", "1.0", "0.0"])
    def test_wrong_format_version(self, case: Case, version: str) -> None:
        payload = case.encode(case.make()).payload
        with pytest.raises(SerializationError, match="format version"):
            case.decode(DurableRecord(case.fmt.record_type, version, payload))

    def test_every_missing_key(self, case: Case) -> None:
        for key in case.fmt.schema.keys:
            record = tampered(case, partial(_drop, key))
            with pytest.raises(SerializationError, match=f"missing \\['{key}'\\]"):
                case.decode(record)

    def test_extra_key(self, case: Case) -> None:
        record = tampered(case, lambda payload: payload.update(surprise=1))
        with pytest.raises(SerializationError, match="unknown \\['surprise'\\]"):
            case.decode(record)

    def test_wrong_field_types(self, case: Case) -> None:
        for key, bad in case.wrong_types.items():
            record = tampered(case, partial(_put, key, bad))
            with pytest.raises(SerializationError, match="cannot decode") as caught:
                case.decode(record)
            assert key in str(caught.value), key

    @pytest.mark.parametrize(
        "bad", [1714564800, "not a time", "2024-05-01T12:00:00", "2024-05-01", None]
    )
    def test_timestamps_must_be_aware_iso_text(self, timed_case: Case, bad: object) -> None:
        for name in timed_case.fmt.schema.timestamps:
            record = tampered(timed_case, partial(_put, name, bad))
            with pytest.raises(SerializationError, match=f"cannot decode .*{name}"):
                timed_case.decode(record)

    def test_entry_must_agree_with_the_payload(self, case: Case) -> None:
        value = case.make()
        entry = case.entry(value, case.encode(value))
        if isinstance(entry, RecordEntry):
            mismatches: list[dict[str, Any]] = [
                {"key": "other-key"},
                {"revision": entry.revision + 1},
                {"attributes": {**entry.attributes, "extra": 1}},
                *case.extra_mismatches(entry),
            ]
        else:
            mismatches = [{"id": "other-id"}, {"position": entry.position + 1}]
        for change in mismatches:
            with pytest.raises(SerializationError, match="does not match"):
                case.decode(dataclasses.replace(entry, **change))

    def test_expectations_are_checked(self, case: Case) -> None:
        value = case.make()
        entry = case.entry(value, case.encode(value))
        for name, wrong in case.expectations.items():
            with pytest.raises(SerializationError, match=f"expected {name}"):
                case.decode(entry, **{name: wrong})

    @pytest.mark.parametrize("source", [None, {"record_type": "x"}, "record", 3])
    def test_decode_needs_an_entry_or_a_record(self, case: Case, source: object) -> None:
        with pytest.raises(SerializationError, match="expected a"):
            case.decode(source)

    def test_decode_refuses_the_other_entry_kind(self, case: Case) -> None:
        value = case.make()
        record = case.encode(value)
        other = (
            RecordEntry("k", 1, {}, record)
            if isinstance(case.entry(value, record), StreamEntry)
            else StreamEntry(1, "k", record)
        )
        with pytest.raises(SerializationError, match="expected a"):
            case.decode(other)

    def test_errors_are_domain_and_storage_serialization_errors(self, case: Case) -> None:
        with pytest.raises(SerializationError) as caught:
            case.decode(DurableRecord("x.y", "0.1", {}))
        assert isinstance(caught.value, StorageSerializationError)


def _matching(case: Case, value: Any) -> dict[str, object]:
    """Expectations that hold for ``value`` (the same names as the mismatching ones)."""
    return {
        name: value.is_active if name == "active" else getattr(value, name)
        for name in case.expectations
    }


@pytest.mark.parametrize(
    ("encode", "value"),
    [
        (codecs.encode_agent_root, "agent"),
        (codecs.encode_agent_root, team_root()),
        (codecs.encode_agent_execution, agent_root()),
        (codecs.encode_journal_record, {"record_id": "r"}),
        (codecs.encode_handoff_state, None),
        (codecs.encode_team_root, agent_root()),
        (codecs.encode_team_execution, agent_execution()),
    ],
)
def test_encode_refuses_other_values(encode: Callable[[Any], DurableRecord], value: object) -> None:
    with pytest.raises(SerializationError, match="cannot encode"):
        encode(value)


class TestPayloadForm:
    def test_timestamps_are_utc_text_with_microseconds(self) -> None:
        payload = codecs.encode_agent_root(agent_root()).payload
        assert payload["created_at"] == "2024-05-01T12:00:00.000000Z"
        assert payload["updated_at"] == "2024-05-01T12:05:00.000000Z"

    def test_offsets_are_read_as_utc(self) -> None:
        record = tampered(
            CASES[0], lambda payload: payload.update(created_at="2024-05-01T14:00:00+02:00")
        )
        assert codecs.decode_agent_root(record).created_at == T0

    def test_json_members_are_plain(self) -> None:
        payload = codecs.encode_team_execution(team_execution()).payload
        assert payload["tasks"] == [{"id": "t1"}]
        assert payload["coordinator"] == {"agent_id": "coord", "state": "reserved"}
        assert payload["status"] == "active"

    def test_attribute_helpers(self) -> None:
        run = agent_execution()
        assert codecs.agent_execution_attributes(run) == {"owner": "agent-1", "active": True}
        done = team_execution().evolve(status="completed")
        assert codecs.team_execution_attributes(done) == {"owner": "team-1", "active": False}
        assert codecs.handoff_state_attributes(handoff_state()) == {"active_agent_id": "target"}

    def test_record_formats(self) -> None:
        assert [(f.record_type, f.format_version) for f in codecs.RECORD_FORMATS] == [
            ("phronomy.agent_root", "0.1"),
            ("phronomy.agent_execution", "0.1"),
            ("phronomy.journal_record", "0.1"),
            ("phronomy.workflow_state", "0.1"),
            ("phronomy.handoff_state", "0.1"),
            ("phronomy.team_root", "0.1"),
            ("phronomy.team_execution", "0.1"),
        ]

    def test_json_members_decode_to_read_only_values(self) -> None:
        decoded = codecs.decode_agent_root(codecs.encode_agent_root(agent_root()))
        assert decoded.metadata["labels"] == ("a", "b")
        with pytest.raises(TypeError):
            decoded.metadata["nested"]["none"] = 1


class TestAgentExecutionPayload:
    def test_nested_payloads(self) -> None:
        payload = codecs.encode_agent_execution(agent_execution()).payload
        assert [item["sequence"] for item in payload["working_records"]] == [None, None]
        assert set(payload["working_records"][0]) == set(codecs.JOURNAL_RECORD.schema.keys)
        assert set(payload["llm_calls"][0]) == set(codecs.LLM_CALL.keys)
        assert payload["llm_calls"][0]["completed_at"] == "2024-05-01T12:05:00.000000Z"
        assert payload["approval_request"]["approved"] is False

    def test_a_run_without_approval_round_trips(self) -> None:
        run = AgentExecution.start("run-9", agent_id="agent-1", base=agent_root(), created_at=T0)
        assert codecs.decode_agent_execution(codecs.encode_agent_execution(run)) == run

    @pytest.mark.parametrize(
        "change",
        [
            lambda p: p["working_records"][0].pop("kind"),
            lambda p: p["working_records"][0].update(extra=1),
            lambda p: p["working_records"].__setitem__(0, "record"),
            lambda p: p["working_records"][0].update(agent_id="agent-2"),
            lambda p: p["working_records"][0].update(execution_id="run-2"),
            lambda p: p["working_records"][0].update(sequence=0),
            lambda p: p["working_records"][0].update(occurred_at="later"),
            lambda p: p["llm_calls"][0].pop("status"),
            lambda p: p["llm_calls"][0].update(execution_id="run-2"),
            lambda p: p["llm_calls"][0].update(status="running"),
            lambda p: p["llm_calls"][0].update(completed_at=3),
            lambda p: p["llm_calls"].__setitem__(0, []),
            lambda p: p["approval_request"].update(execution_id="run-2"),
            lambda p: p["approval_request"].update(items=[]),
            lambda p: p["approval_request"]["items"][0].pop("origin"),
        ],
    )
    def test_nested_rejections(self, change: Callable[[dict[str, Any]], None]) -> None:
        with pytest.raises(SerializationError, match="cannot decode"):
            codecs.decode_agent_execution(tampered(CASES[1], change))


class TestJournalPayload:
    def test_encode_needs_a_sequence(self) -> None:
        unsequenced = dataclasses.replace(journal_record(), sequence=None)
        with pytest.raises(SerializationError, match="sequence"):
            codecs.encode_journal_record(unsequenced)

    def test_a_stored_record_needs_a_sequence(self) -> None:
        record = tampered(CASES[2], lambda payload: payload.update(sequence=None))
        with pytest.raises(SerializationError, match="sequence"):
            codecs.decode_journal_record(record)

    def test_legacy_correlation_id_is_read_and_dropped(self) -> None:
        record = tampered(CASES[2], lambda payload: payload.update(correlation_id="c-1"))
        decoded = codecs.decode_journal_record(record)
        assert decoded == journal_record()
        assert "correlation_id" not in codecs.encode_journal_record(decoded).payload


class TestWorkflowPayload:
    def test_payload_holds_the_normal_form(self) -> None:
        record = codecs.encode_workflow_state(
            "wf-1", workflow_revision=1, snapshot={"fields": {"t": (1, 2)}, "phase": None}
        )
        assert record.payload == {
            "workflow_instance_id": "wf-1",
            "workflow_revision": 1,
            "snapshot": {"fields": {"t": [1, 2]}, "phase": None},
        }

    @pytest.mark.parametrize(
        "snapshot",
        [
            {"fields": {"when": datetime(2024, 1, 1, tzinfo=UTC)}, "phase": None},
            {"fields": {"big": 2**53}, "phase": None},
            {"fields": {}, "phase": None, "extra": 1},
            "snapshot",
        ],
    )
    def test_unsupported_values_are_serialization_errors(self, snapshot: Any) -> None:
        with pytest.raises(SerializationError, match="unsupported Workflow durable value"):
            codecs.encode_workflow_state("wf-1", workflow_revision=1, snapshot=snapshot)

    @pytest.mark.parametrize(("workflow_id", "revision"), [("", 1), ("wf-1", 0), ("wf-1", "1")])
    def test_identity_and_revision_are_checked_on_encode(
        self, workflow_id: str, revision: Any
    ) -> None:
        with pytest.raises(SerializationError, match="cannot encode"):
            codecs.encode_workflow_state(
                workflow_id, workflow_revision=revision, snapshot={"fields": {}, "phase": None}
            )

    @pytest.mark.parametrize(
        "snapshot",
        [
            {"fields": {}},
            {"fields": [], "phase": None},
            {"fields": {}, "phase": 1},
        ],
    )
    def test_stored_snapshot_must_be_in_normal_form(self, snapshot: object) -> None:
        record = tampered(CASES[3], lambda payload: payload.update(snapshot=snapshot))
        with pytest.raises(SerializationError, match="unsupported Workflow durable value"):
            codecs.decode_workflow_state(record)

    def test_each_decode_is_a_new_copy(self) -> None:
        record = encode_workflow(workflow_state())
        first = codecs.decode_workflow_state(record)
        first.snapshot["fields"]["items"].append("changed")
        assert codecs.decode_workflow_state(record) == workflow_state()
