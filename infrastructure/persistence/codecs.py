"""Record codecs: each durable value to and from its ``DurableRecord`` envelope.

One table row per record type (a :class:`ValueCodec`: record type, format
version, value class, the fields that are its storage key and revision,
its storage attributes), all at format version ``0.1``. The payload keys
are the value's declared fields and its timestamps the fields declared with
a timestamp check, so a field added to a value is one line there and none
here. Each ``encode_*``/``decode_*`` name is its row's ``encode``/``decode``.
Payload keys are exactly the value's field names; timestamps are
ISO-8601 UTC text (``2024-05-01T12:00:00.000000Z``); JSON objects and
arrays are plain ``dict``/``list``.

Decoders are strict and never upgrade: the record type and format version
must match exactly, the payload key set must be exact and every field must
have its type. Given a storage entry they also check that its key,
revision and attributes agree with the payload, and keyword arguments add
the caller's own expectations (``None`` means "not checked"). Every
failure raises :class:`~nenjim.domain.persistence.errors.SerializationError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from nenjim.domain import durable_fields as f
from nenjim.domain.agents import (
    AgentExecution,
    AgentJournalRecord,
    AgentRoot,
    HandoffState,
    LLMCallRecord,
)
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.domain.workflows import WorkflowState, freeze_snapshot, normalize_snapshot
from nenjim.infrastructure.persistence.codec_support import (
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
from nenjim.infrastructure.persistence.errors import SerializationError
from nenjim.infrastructure.storage import DurableRecord

_V = TypeVar("_V")
Attributes = dict[str, str | int | bool | None]


def schema_of(cls: type[Any], *, tolerated: frozenset[str] = frozenset()) -> PayloadSchema:
    """The payload schema of a durable value type: its declared fields and timestamps."""
    return PayloadSchema(cls.__name__, f.field_names(cls), f.timestamp_fields(cls), tolerated)


AGENT_ROOT = RecordFormat("phronomy.agent_root", "0.1", schema_of(AgentRoot))
# ``correlation_id`` was written by old versions: accepted and ignored on read, never written.
JOURNAL_RECORD = RecordFormat(
    "phronomy.journal_record",
    "0.1",
    schema_of(AgentJournalRecord, tolerated=frozenset({"correlation_id"})),
)
LLM_CALL = schema_of(LLMCallRecord)
AGENT_EXECUTION = RecordFormat("phronomy.agent_execution", "0.1", schema_of(AgentExecution))
WORKFLOW_STATE = RecordFormat("phronomy.workflow_state", "0.1", schema_of(WorkflowState))
HANDOFF_STATE = RecordFormat("phronomy.handoff_state", "0.1", schema_of(HandoffState))
TEAM_ROOT = RecordFormat("phronomy.team_root", "0.1", schema_of(TeamRoot))
TEAM_EXECUTION = RecordFormat("phronomy.team_execution", "0.1", schema_of(TeamExecution))

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


def agent_execution_attributes(execution: AgentExecution) -> Attributes:
    """The ``agent.executions`` attributes of ``execution``: its owner and whether it is active."""
    return {"owner": execution.agent_id, "active": execution.is_active}


def team_execution_attributes(execution: TeamExecution) -> Attributes:
    """The ``team.executions`` attributes of ``execution``: its owner and whether it is active."""
    return {"owner": execution.team_id, "active": execution.is_active}


def handoff_state_attributes(state: HandoffState) -> Attributes:
    """The ``handoff.states`` attributes of ``state``: the active Agent."""
    return {"active_agent_id": state.active_agent_id}


def _no_attributes(_: object) -> Attributes:
    return {}


# -- the codec of a record row ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueCodec(Generic[_V]):
    """How one kind of durable value is a storage row: its envelope, key, revision and attributes.

    ``convert`` turns a payload member into its field's value before the
    value is built: the items of arrays that hold values of their own (an
    execution's journal records and LLM calls), a snapshot kept as stored.
    """

    format: RecordFormat
    cls: type[_V]
    key: str
    revision: str
    attributes: Callable[[_V], Attributes] = _no_attributes
    convert: Mapping[str, Callable[[Any, str], Any]] = field(default_factory=dict)

    def encode(self, value: _V) -> DurableRecord:
        """The envelope of ``value`` (anything else is a ``SerializationError``)."""
        require_value(value, self.cls, self.format.label)
        return build_record(self.format, _payload(value, self.format.schema))

    def decode(self, source: object, **expected: object) -> _V:
        """The value in a ``RecordEntry`` or a bare envelope.

        An entry must have the value's key, revision and attributes. Each
        keyword names a field (or ``active``) whose value the caller expects
        (``None``: not checked).
        """
        label = self.format.label
        unknown = sorted(set(expected) - {*self.format.schema.keys, "active"})
        if unknown:
            raise TypeError(f"decode of {label} got unexpected expectations {unknown}")
        entry, record = record_of_entry(source, label)
        with decoding(label):
            fields = payload_fields(record, self.format)
            for name, convert in self.convert.items():
                fields[name] = convert(fields[name], label)
            value = self.cls(**fields)
        check_record_entry(
            entry,
            label,
            key=getattr(value, self.key),
            revision=getattr(value, self.revision),
            attributes=self.attributes(value),
        )
        check_agrees(
            label,
            tuple(
                (f"expected {name}", _expected(value, name), want)
                for name, want in expected.items()
            ),
        )
        return value


def _expected(value: object, name: str) -> object:
    return getattr(value, "is_active" if name == "active" else name)


def _journal_record(payload: object, label: str) -> AgentJournalRecord:
    """A working record nested in an execution; its ``sequence`` may be ``None``."""
    return AgentJournalRecord(**object_fields(payload, replace(JOURNAL_RECORD.schema, label=label)))


def _llm_call(payload: object, _: str) -> LLMCallRecord:
    return LLMCallRecord(**object_fields(payload, LLM_CALL))


def _array_of(name: str, item: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """The converter of a payload array whose items are values of their own."""

    def convert(value: Any, label: str) -> tuple[Any, ...]:
        items = object_list(value, name, label)
        return tuple(item(child, f"{label} {name}[{index}]") for index, child in enumerate(items))

    return convert


AGENT_ROOTS = ValueCodec(AGENT_ROOT, AgentRoot, "agent_id", "agent_revision")
AGENT_EXECUTIONS = ValueCodec(
    AGENT_EXECUTION,
    AgentExecution,
    "execution_id",
    "execution_revision",
    agent_execution_attributes,
    {
        "working_records": _array_of("working_records", _journal_record),
        "llm_calls": _array_of("llm_calls", _llm_call),
    },
)
HANDOFF_STATES = ValueCodec(
    HANDOFF_STATE, HandoffState, "main_agent_id", "handoff_revision", handoff_state_attributes
)
TEAM_ROOTS = ValueCodec(TEAM_ROOT, TeamRoot, "team_id", "team_revision")
TEAM_EXECUTIONS = ValueCodec(
    TEAM_EXECUTION,
    TeamExecution,
    "team_execution_id",
    "execution_revision",
    team_execution_attributes,
)
# A stored snapshot must already be in normal form: it is checked, never converted, on read.
WORKFLOW_STATES = ValueCodec(
    WORKFLOW_STATE,
    WorkflowState,
    "workflow_instance_id",
    "workflow_revision",
    convert={"snapshot": lambda snapshot, _: freeze_snapshot(snapshot)},
)

encode_agent_root = AGENT_ROOTS.encode
decode_agent_root = AGENT_ROOTS.decode
encode_agent_execution = AGENT_EXECUTIONS.encode
decode_agent_execution = AGENT_EXECUTIONS.decode
encode_handoff_state = HANDOFF_STATES.encode
decode_handoff_state = HANDOFF_STATES.decode
encode_team_root = TEAM_ROOTS.encode
decode_team_root = TEAM_ROOTS.decode
encode_team_execution = TEAM_EXECUTIONS.encode
decode_team_execution = TEAM_EXECUTIONS.decode


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

    The snapshot is normalised first (see :mod:`nenjim.domain.workflows`); a value
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
    return WORKFLOW_STATES.decode(
        source, workflow_instance_id=workflow_instance_id, workflow_revision=workflow_revision
    )


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
