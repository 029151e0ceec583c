"""Record codecs: each durable value to and from its ``DurableRecord`` envelope.

One ``encode_*``/``decode_*`` pair per record type, all at format version
``0.1``. Payload keys are exactly the value's field names; timestamps are
ISO-8601 UTC text (``2024-05-01T12:00:00.000000Z``); JSON objects and
arrays are plain ``dict``/``list``.

Decoders are strict and never upgrade: the record type and format version
must match exactly, the payload key set must be exact and every field must
have its type. Given a storage entry they also check that its key,
revision and attributes agree with the payload, and keyword arguments add
the caller's own expectations (``None`` means "not checked"). Every
failure raises :class:`~domain.persistence.errors.SerializationError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState, LLMCallRecord
from domain.persistence.errors import SerializationError
from domain.teams import TeamExecution, TeamRoot
from domain.workflows import WorkflowState, freeze_snapshot, normalize_snapshot
from infrastructure.persistence.codec_support import (
    PayloadSchema,
    RecordFormat,
    build_record,
    check_agrees,
    check_record_entry,
    decoding,
    encoding,
    format_timestamp,
    object_fields,
    object_list,
    payload_fields,
    record_of_entry,
    record_of_stream_entry,
    require_value,
)
from infrastructure.storage import DurableRecord

_CREATED_UPDATED = frozenset({"created_at", "updated_at"})

AGENT_ROOT = RecordFormat(
    "phronomy.agent_root",
    "0.1",
    PayloadSchema(
        "AgentRoot",
        (
            "agent_id",
            "agent_definition_id",
            "agent_definition_version",
            "agent_revision",
            "context_revision",
            "journal_position",
            "lifecycle_status",
            "transcript_generation",
            "created_at",
            "updated_at",
            "metadata",
        ),
        _CREATED_UPDATED,
    ),
)

JOURNAL_RECORD = RecordFormat(
    "phronomy.journal_record",
    "0.1",
    PayloadSchema(
        "AgentJournalRecord",
        (
            "record_id",
            "agent_id",
            "sequence",
            "execution_id",
            "llm_call_id",
            "kind",
            "channel",
            "role",
            "content_ref",
            "parent_id",
            "causation_id",
            "visibility",
            "context_generation",
            "context_candidate",
            "occurred_at",
            "metadata",
        ),
        frozenset({"occurred_at"}),
        # Written by old versions, accepted and ignored on read (never written).
        tolerated=frozenset({"correlation_id"}),
    ),
)

LLM_CALL = PayloadSchema(
    "LLMCallRecord",
    (
        "llm_call_id",
        "execution_id",
        "sequence",
        "status",
        "manifest_ref",
        "output_ref",
        "error_ref",
        "usage_ref",
        "started_at",
        "completed_at",
        "metadata",
    ),
    frozenset({"started_at", "completed_at"}),
)

AGENT_EXECUTION = RecordFormat(
    "phronomy.agent_execution",
    "0.1",
    PayloadSchema(
        "AgentExecution",
        (
            "execution_id",
            "agent_id",
            "execution_revision",
            "status",
            "phase",
            "base_agent_revision",
            "base_context_revision",
            "base_journal_position",
            "working_records",
            "llm_calls",
            "approval_request",
            "result_ref",
            "error_ref",
            "created_at",
            "updated_at",
            "terminal_reason",
            "metadata",
        ),
        _CREATED_UPDATED,
    ),
)

WORKFLOW_STATE = RecordFormat(
    "phronomy.workflow_state",
    "0.1",
    PayloadSchema("WorkflowState", ("workflow_instance_id", "workflow_revision", "snapshot")),
)

HANDOFF_STATE = RecordFormat(
    "phronomy.handoff_state",
    "0.1",
    PayloadSchema(
        "HandoffState",
        (
            "main_agent_id",
            "handoff_revision",
            "active_agent_id",
            "active_handoff_context_ref",
            "phase",
            "pending_source_execution_id",
            "pending_target_execution_id",
            "created_at",
            "updated_at",
            "metadata",
        ),
        _CREATED_UPDATED,
    ),
)

TEAM_ROOT = RecordFormat(
    "phronomy.team_root",
    "0.1",
    PayloadSchema(
        "TeamRoot",
        (
            "team_id",
            "team_definition_id",
            "team_definition_version",
            "team_revision",
            "lifecycle_status",
            "created_at",
            "updated_at",
            "metadata",
        ),
        _CREATED_UPDATED,
    ),
)

TEAM_EXECUTION = RecordFormat(
    "phronomy.team_execution",
    "0.1",
    PayloadSchema(
        "TeamExecution",
        (
            "team_execution_id",
            "team_id",
            "execution_revision",
            "status",
            "phase",
            "input_ref",
            "coordinator",
            "tasks",
            "workers",
            "assignments",
            "result_ref",
            "error_ref",
            "created_at",
            "updated_at",
            "metadata",
        ),
        _CREATED_UPDATED,
    ),
)

RECORD_FORMATS: tuple[RecordFormat, ...] = (
    AGENT_ROOT,
    AGENT_EXECUTION,
    JOURNAL_RECORD,
    WORKFLOW_STATE,
    HANDOFF_STATE,
    TEAM_ROOT,
    TEAM_EXECUTION,
)


# -- storage attributes -------------------------------------------------------


def agent_execution_attributes(execution: AgentExecution) -> dict[str, str | bool]:
    """The ``agent.executions`` attributes of ``execution``: its owner and whether it is active."""
    return {"owner": execution.agent_id, "active": execution.is_active}


def team_execution_attributes(execution: TeamExecution) -> dict[str, str | bool]:
    """The ``team.executions`` attributes of ``execution``: its owner and whether it is active."""
    return {"owner": execution.team_id, "active": execution.is_active}


def handoff_state_attributes(state: HandoffState) -> dict[str, str]:
    """The ``handoff.states`` attributes of ``state``: the active Agent."""
    return {"active_agent_id": state.active_agent_id}


# -- agent.roots --------------------------------------------------------------


def encode_agent_root(root: AgentRoot) -> DurableRecord:
    """The ``phronomy.agent_root`` envelope of ``root``."""
    require_value(root, AgentRoot, AGENT_ROOT.label)
    return build_record(AGENT_ROOT, _payload(root, AGENT_ROOT.schema))


def decode_agent_root(
    source: object, *, agent_id: str | None = None, agent_revision: int | None = None
) -> AgentRoot:
    """The root in a ``RecordEntry`` (key = ``agent_id``, no attributes) or a bare envelope."""
    entry, record = record_of_entry(source, AGENT_ROOT.label)
    with decoding(AGENT_ROOT.label):
        root = AgentRoot(**payload_fields(record, AGENT_ROOT))
    check_record_entry(
        entry, AGENT_ROOT.label, key=root.agent_id, revision=root.agent_revision, attributes={}
    )
    check_agrees(
        AGENT_ROOT.label,
        (
            ("expected agent_id", root.agent_id, agent_id),
            ("expected agent_revision", root.agent_revision, agent_revision),
        ),
    )
    return root


# -- agent.executions ---------------------------------------------------------


def encode_agent_execution(execution: AgentExecution) -> DurableRecord:
    """The ``phronomy.agent_execution`` envelope of ``execution``."""
    require_value(execution, AgentExecution, AGENT_EXECUTION.label)
    return build_record(AGENT_EXECUTION, _payload(execution, AGENT_EXECUTION.schema))


def decode_agent_execution(
    source: object,
    *,
    execution_id: str | None = None,
    agent_id: str | None = None,
    execution_revision: int | None = None,
    active: bool | None = None,
) -> AgentExecution:
    """The execution in a ``RecordEntry`` or a bare envelope.

    An entry must have key = ``execution_id``, revision =
    ``execution_revision`` and attributes ``{"owner": agent_id, "active":
    is_active}``.
    """
    label = AGENT_EXECUTION.label
    entry, record = record_of_entry(source, label)
    with decoding(label):
        fields = payload_fields(record, AGENT_EXECUTION)
        fields["working_records"] = tuple(
            _journal_record(item, f"{label} working_records[{index}]")
            for index, item in enumerate(
                object_list(fields["working_records"], "working_records", label)
            )
        )
        fields["llm_calls"] = tuple(
            LLMCallRecord(**object_fields(item, LLM_CALL))
            for item in object_list(fields["llm_calls"], "llm_calls", label)
        )
        execution = AgentExecution(**fields)
    check_record_entry(
        entry,
        label,
        key=execution.execution_id,
        revision=execution.execution_revision,
        attributes=agent_execution_attributes(execution),
    )
    check_agrees(
        label,
        (
            ("expected execution_id", execution.execution_id, execution_id),
            ("expected agent_id", execution.agent_id, agent_id),
            ("expected execution_revision", execution.execution_revision, execution_revision),
            ("expected active", execution.is_active, active),
        ),
    )
    return execution


# -- agent.journal ------------------------------------------------------------


def encode_journal_record(record: AgentJournalRecord) -> DurableRecord:
    """The ``phronomy.journal_record`` envelope of an appended ``record`` (``sequence`` set)."""
    require_value(record, AgentJournalRecord, JOURNAL_RECORD.label)
    if record.sequence is None:
        raise SerializationError(
            f"cannot encode {JOURNAL_RECORD.label}: sequence is not set (see with_sequence)"
        )
    return build_record(JOURNAL_RECORD, _payload(record, JOURNAL_RECORD.schema))


def decode_journal_record(
    source: object, *, agent_id: str | None = None, sequence: int | None = None
) -> AgentJournalRecord:
    """The record in a ``StreamEntry`` (id = ``record_id``, position = ``sequence``) or envelope.

    Stream entries do not carry their stream, so pass ``agent_id`` (the
    stream name) to check the owner.
    """
    label = JOURNAL_RECORD.label
    entry, envelope = record_of_stream_entry(source, label)
    with decoding(label):
        record = AgentJournalRecord(**payload_fields(envelope, JOURNAL_RECORD))
    if record.sequence is None:
        raise SerializationError(f"cannot decode {label}: a stored record needs a sequence")
    if entry is not None:
        check_agrees(
            label,
            (
                ("entry id", record.record_id, entry.id),
                ("entry position", record.sequence, entry.position),
            ),
        )
    check_agrees(
        label,
        (
            ("expected agent_id", record.agent_id, agent_id),
            ("expected sequence", record.sequence, sequence),
        ),
    )
    return record


# -- workflow.states ----------------------------------------------------------


def encode_workflow_state(
    workflow_instance_id: str, *, workflow_revision: int, snapshot: Mapping[str, Any]
) -> DurableRecord:
    """The ``phronomy.workflow_state`` envelope of a snapshot at ``workflow_revision`` (> 0).

    The snapshot is normalised first (see :mod:`domain.workflows`); a value
    outside the Workflow value domain raises ``SerializationError`` whose
    message says "unsupported Workflow durable value".
    """
    with encoding(WORKFLOW_STATE.label):
        state = WorkflowState(workflow_instance_id, workflow_revision, normalize_snapshot(snapshot))
    return build_record(WORKFLOW_STATE, _payload(state, WORKFLOW_STATE.schema))


def decode_workflow_state(
    source: object,
    *,
    workflow_instance_id: str | None = None,
    workflow_revision: int | None = None,
) -> WorkflowState:
    """The state in a ``RecordEntry`` (key = id, revision = ``workflow_revision``) or envelope.

    The snapshot must already be in normal form; each decode returns a new copy.
    """
    label = WORKFLOW_STATE.label
    entry, record = record_of_entry(source, label)
    with decoding(label):
        fields = payload_fields(record, WORKFLOW_STATE)
        fields["snapshot"] = freeze_snapshot(fields["snapshot"])
        state = WorkflowState(**fields)
    check_record_entry(
        entry,
        label,
        key=state.workflow_instance_id,
        revision=state.workflow_revision,
        attributes={},
    )
    check_agrees(
        label,
        (
            ("expected workflow_instance_id", state.workflow_instance_id, workflow_instance_id),
            ("expected workflow_revision", state.workflow_revision, workflow_revision),
        ),
    )
    return state


# -- handoff.states -----------------------------------------------------------


def encode_handoff_state(state: HandoffState) -> DurableRecord:
    """The ``phronomy.handoff_state`` envelope of ``state``."""
    require_value(state, HandoffState, HANDOFF_STATE.label)
    return build_record(HANDOFF_STATE, _payload(state, HANDOFF_STATE.schema))


def decode_handoff_state(
    source: object, *, main_agent_id: str | None = None, handoff_revision: int | None = None
) -> HandoffState:
    """The state in a ``RecordEntry`` or a bare envelope.

    An entry must have key = ``main_agent_id``, revision =
    ``handoff_revision`` and attributes ``{"active_agent_id": ...}``.
    """
    entry, record = record_of_entry(source, HANDOFF_STATE.label)
    with decoding(HANDOFF_STATE.label):
        state = HandoffState(**payload_fields(record, HANDOFF_STATE))
    check_record_entry(
        entry,
        HANDOFF_STATE.label,
        key=state.main_agent_id,
        revision=state.handoff_revision,
        attributes=handoff_state_attributes(state),
    )
    check_agrees(
        HANDOFF_STATE.label,
        (
            ("expected main_agent_id", state.main_agent_id, main_agent_id),
            ("expected handoff_revision", state.handoff_revision, handoff_revision),
        ),
    )
    return state


# -- team.roots ---------------------------------------------------------------


def encode_team_root(root: TeamRoot) -> DurableRecord:
    """The ``phronomy.team_root`` envelope of ``root``."""
    require_value(root, TeamRoot, TEAM_ROOT.label)
    return build_record(TEAM_ROOT, _payload(root, TEAM_ROOT.schema))


def decode_team_root(
    source: object, *, team_id: str | None = None, team_revision: int | None = None
) -> TeamRoot:
    """The root in a ``RecordEntry`` (key = ``team_id``, no attributes) or a bare envelope."""
    entry, record = record_of_entry(source, TEAM_ROOT.label)
    with decoding(TEAM_ROOT.label):
        root = TeamRoot(**payload_fields(record, TEAM_ROOT))
    check_record_entry(
        entry, TEAM_ROOT.label, key=root.team_id, revision=root.team_revision, attributes={}
    )
    check_agrees(
        TEAM_ROOT.label,
        (
            ("expected team_id", root.team_id, team_id),
            ("expected team_revision", root.team_revision, team_revision),
        ),
    )
    return root


# -- team.executions ----------------------------------------------------------


def encode_team_execution(execution: TeamExecution) -> DurableRecord:
    """The ``phronomy.team_execution`` envelope of ``execution``."""
    require_value(execution, TeamExecution, TEAM_EXECUTION.label)
    return build_record(TEAM_EXECUTION, _payload(execution, TEAM_EXECUTION.schema))


def decode_team_execution(
    source: object,
    *,
    team_execution_id: str | None = None,
    team_id: str | None = None,
    execution_revision: int | None = None,
    active: bool | None = None,
) -> TeamExecution:
    """The run in a ``RecordEntry`` or a bare envelope.

    An entry must have key = ``team_execution_id``, revision =
    ``execution_revision`` and attributes ``{"owner": team_id, "active":
    is_active}``.
    """
    label = TEAM_EXECUTION.label
    entry, record = record_of_entry(source, label)
    with decoding(label):
        execution = TeamExecution(**payload_fields(record, TEAM_EXECUTION))
    check_record_entry(
        entry,
        label,
        key=execution.team_execution_id,
        revision=execution.execution_revision,
        attributes=team_execution_attributes(execution),
    )
    check_agrees(
        label,
        (
            ("expected team_execution_id", execution.team_execution_id, team_execution_id),
            ("expected team_id", execution.team_id, team_id),
            ("expected execution_revision", execution.execution_revision, execution_revision),
            ("expected active", execution.is_active, active),
        ),
    )
    return execution


# -- payload building ---------------------------------------------------------


def _payload(value: object, schema: PayloadSchema) -> dict[str, Any]:
    return {key: _plain(getattr(value, key)) for key in schema.keys}


def _plain(value: Any) -> Any:
    """The payload form of a field: text timestamps, nested payloads, plain containers."""
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, AgentJournalRecord):
        return _payload(value, JOURNAL_RECORD.schema)
    if isinstance(value, LLMCallRecord):
        return _payload(value, LLM_CALL)
    if isinstance(value, Mapping):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(child) for child in value]
    return value


def _journal_record(payload: object, label: str) -> AgentJournalRecord:
    """A working record nested in an execution; its ``sequence`` may be ``None``."""
    return AgentJournalRecord(**object_fields(payload, replace(JOURNAL_RECORD.schema, label=label)))
