"""``AgentExecution``: one run of an Agent, with its LLM calls and pending approval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.domain.agents.journal import AgentJournalRecord
from nenjim.domain.agents.root import AgentRoot
from nenjim.immutable import immutable

ACTIVE_STATUSES = frozenset({"preparing", "active", "suspended"})
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
EXECUTION_STATUSES = ACTIVE_STATUSES | TERMINAL_STATUSES


class RunStatus:
    """``is_active``/``is_terminal`` of a run with a ``status`` (Agent and Team runs alike)."""

    __slots__ = ()
    status: str

    @property
    def is_active(self) -> bool:
        """True while the run is not terminal (it holds its owner's admission)."""
        return self.status in ACTIVE_STATUSES

    @property
    def is_terminal(self) -> bool:
        """True once the run has completed, failed or been cancelled."""
        return self.status in TERMINAL_STATUSES


LLM_CALL_STATUSES = frozenset({"completed", "failed", "cancelled"})

APPROVAL_REQUEST_KEYS = frozenset({"id", "execution_id", "items", "created_at"})
APPROVAL_REQUEST_OPTIONAL_KEYS = frozenset({"approved"})
APPROVAL_ITEM_KEYS = frozenset(
    {
        "tool_invocation_id",
        "tool_call_id",
        "tool_name",
        "arguments",
        "facts",
        "reason",
        "origin",
        "metadata",
    }
)


@immutable
@dataclass(frozen=True, slots=True)
class LLMCallRecord(f.Checked):
    """One finished LLM call of an execution; its manifest, output and usage are content refs."""

    llm_call_id: str = field(metadata=f.checked(f.text))
    execution_id: str = field(metadata=f.checked(f.text))
    sequence: int = field(metadata=f.checked(f.positive))
    status: str = field(metadata=f.checked(f.one_of(LLM_CALL_STATUSES)))
    manifest_ref: str = field(metadata=f.checked(f.text))
    output_ref: str | None = field(metadata=f.checked(f.optional_text))
    error_ref: str | None = field(metadata=f.checked(f.optional_text))
    usage_ref: str | None = field(metadata=f.checked(f.optional_text))
    started_at: datetime = field(metadata=f.checked(f.timestamp))
    completed_at: datetime | None = field(metadata=f.checked(f.optional_timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))


@immutable
@dataclass(frozen=True, slots=True)
class AgentExecution(RunStatus, f.Revised):
    """A run of an Agent (record type ``phronomy.agent_execution``).

    Statuses ``preparing``, ``active`` and ``suspended`` are active: an Agent
    admits at most one active execution. ``completed``, ``failed`` and
    ``cancelled`` are terminal. The values do not police transitions; the
    repositories' revision and attribute checks do.

    ``base_*`` record the root the run started from. ``working_records`` are
    journal records of this Agent not yet appended (their ``execution_id``
    is this run or ``None``); ``llm_calls`` belong to this run.
    ``approval_request`` is ``None`` or a read-only JSON object with ``id``,
    ``execution_id`` (this run), a non-empty ``items`` list, ``created_at``
    and optionally ``approved``.
    """

    _revision = "execution_revision"
    _fixed = frozenset({"execution_id", "agent_id", "created_at"})

    execution_id: str = field(metadata=f.checked(f.identifier))
    agent_id: str = field(metadata=f.checked(f.identifier))
    execution_revision: int = field(metadata=f.checked(f.count))
    status: str = field(metadata=f.checked(f.one_of(EXECUTION_STATUSES)))
    phase: str = field(metadata=f.checked(f.text))
    base_agent_revision: int = field(metadata=f.checked(f.count))
    base_context_revision: int = field(metadata=f.checked(f.count))
    base_journal_position: int = field(metadata=f.checked(f.count))
    working_records: tuple[AgentJournalRecord, ...] = field(
        metadata=f.checked(f.tuple_of_kind(AgentJournalRecord))
    )
    llm_calls: tuple[LLMCallRecord, ...] = field(metadata=f.checked(f.tuple_of_kind(LLMCallRecord)))
    approval_request: Mapping[str, Any] | None = field(
        hash=False, metadata=f.checked(f.optional_json_object)
    )
    result_ref: str | None = field(metadata=f.checked(f.optional_text))
    error_ref: str | None = field(metadata=f.checked(f.optional_text))
    created_at: datetime = field(metadata=f.checked(f.timestamp))
    updated_at: datetime = field(metadata=f.checked(f.timestamp))
    terminal_reason: str | None = field(metadata=f.checked(f.optional_text))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

    def __post_init__(self) -> None:
        f.check_fields(self)
        for index, record in enumerate(self.working_records):
            if record.agent_id != self.agent_id:
                raise ValueError(f"working_records[{index}] belongs to Agent {record.agent_id!r}")
            if record.execution_id not in (None, self.execution_id):
                raise ValueError(
                    f"working_records[{index}] belongs to execution {record.execution_id!r}"
                )
        for index, call in enumerate(self.llm_calls):
            if call.execution_id != self.execution_id:
                raise ValueError(f"llm_calls[{index}] belongs to execution {call.execution_id!r}")
        _check_approval_request(self.approval_request, self.execution_id)

    @classmethod
    def start(
        cls,
        execution_id: str,
        *,
        agent_id: str,
        base: AgentRoot,
        phase: str = "preparing",
        working_records: Sequence[AgentJournalRecord] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Self:
        """A new run in status ``preparing`` at revision 0, based on ``base`` (the same Agent)."""
        if not isinstance(base, AgentRoot):
            raise TypeError(f"base must be an AgentRoot, got {type(base).__name__}")
        if agent_id != base.agent_id:
            raise ValueError(f"agent_id {agent_id!r} is not the base root's {base.agent_id!r}")
        now = f.utc_now() if created_at is None else created_at
        return cls(
            execution_id=execution_id,
            agent_id=agent_id,
            execution_revision=0,
            status="preparing",
            phase=phase,
            base_agent_revision=base.agent_revision,
            base_context_revision=base.context_revision,
            base_journal_position=base.journal_position,
            working_records=tuple(working_records),
            llm_calls=(),
            approval_request=None,
            result_ref=None,
            error_ref=None,
            created_at=now,
            updated_at=now,
            terminal_reason=None,
            metadata={} if metadata is None else metadata,
        )


def _check_approval_request(request: Mapping[str, Any] | None, execution_id: str) -> None:
    """The (already read-only) approval request must be one of the run ``execution_id``."""
    if request is None:
        return
    _check_keys(request, APPROVAL_REQUEST_KEYS, APPROVAL_REQUEST_OPTIONAL_KEYS, "approval_request")
    f.text(request["id"], "approval_request.id")
    if request["execution_id"] != execution_id:
        raise ValueError(
            f"approval_request.execution_id {request['execution_id']!r} is not {execution_id!r}"
        )
    f.text(request["created_at"], "approval_request.created_at")
    if "approved" in request:
        f.flag(request["approved"], "approval_request.approved")
    items = request["items"]
    if not isinstance(items, tuple) or not items:
        raise ValueError("approval_request.items must be a non-empty list")
    for index, item in enumerate(items):
        what = f"approval_request.items[{index}]"
        if not isinstance(item, Mapping):
            raise TypeError(f"{what} must be an object, got {type(item).__name__}")
        _check_keys(item, APPROVAL_ITEM_KEYS, frozenset(), what)
        f.text(item["tool_invocation_id"], f"{what}.tool_invocation_id")
        f.optional_text(item["tool_call_id"], f"{what}.tool_call_id")
        f.text(item["tool_name"], f"{what}.tool_name")
        f.json_object(item["arguments"], f"{what}.arguments")
        f.json_object(item["facts"], f"{what}.facts")
        f.optional_text(item["reason"], f"{what}.reason")
        f.text(item["origin"], f"{what}.origin")
        f.json_object(item["metadata"], f"{what}.metadata")


def _check_keys(
    value: Mapping[str, Any], required: frozenset[str], optional: frozenset[str], what: str
) -> None:
    missing = sorted(required - set(value))
    unknown = sorted(set(value) - required - optional)
    if missing or unknown:
        raise ValueError(f"{what}: missing keys {missing}, unknown keys {unknown}")
