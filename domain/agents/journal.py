"""``AgentJournalRecord``: one immutable entry of an Agent's append-only journal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Self

from domain import durable_fields as f


@dataclass(frozen=True, slots=True)
class AgentJournalRecord:
    """A journal entry (record type ``phronomy.journal_record``).

    ``sequence`` is ``None`` until the record is appended: the journal
    assigns it (it equals the stream position). ``kind``, ``channel``,
    ``role`` and ``visibility`` are open vocabularies of non-empty text.
    The content itself lives in the content store; ``content_ref`` names it.
    """

    record_id: str
    agent_id: str
    sequence: int | None
    execution_id: str | None
    llm_call_id: str | None
    kind: str
    channel: str
    role: str | None
    content_ref: str | None
    parent_id: str | None
    causation_id: str | None
    visibility: str
    context_generation: int
    context_candidate: bool
    occurred_at: datetime
    metadata: Mapping[str, Any] = field(hash=False)

    def __post_init__(self) -> None:
        for name, value in (
            ("record_id", f.identifier(self.record_id, "record_id")),
            ("agent_id", f.identifier(self.agent_id, "agent_id")),
            ("sequence", f.optional_positive(self.sequence, "sequence")),
            ("execution_id", f.optional_text(self.execution_id, "execution_id")),
            ("llm_call_id", f.optional_text(self.llm_call_id, "llm_call_id")),
            ("kind", f.text(self.kind, "kind")),
            ("channel", f.text(self.channel, "channel")),
            ("role", f.optional_text(self.role, "role")),
            ("content_ref", f.optional_text(self.content_ref, "content_ref")),
            ("parent_id", f.optional_text(self.parent_id, "parent_id")),
            ("causation_id", f.optional_text(self.causation_id, "causation_id")),
            ("visibility", f.text(self.visibility, "visibility")),
            ("context_generation", f.count(self.context_generation, "context_generation")),
            ("context_candidate", f.flag(self.context_candidate, "context_candidate")),
            ("occurred_at", f.timestamp(self.occurred_at, "occurred_at")),
            ("metadata", f.json_object(self.metadata, "metadata")),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def create(
        cls,
        record_id: str,
        *,
        agent_id: str,
        kind: str,
        content_ref: str | None = None,
        channel: str = "agent",
        role: str | None = None,
        execution_id: str | None = None,
        llm_call_id: str | None = None,
        parent_id: str | None = None,
        causation_id: str | None = None,
        visibility: str = "agent",
        context_generation: int = 0,
        context_candidate: bool = False,
        occurred_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Self:
        """A record not yet appended (``sequence`` is ``None``), occurring now unless given."""
        return cls(
            record_id=record_id,
            agent_id=agent_id,
            sequence=None,
            execution_id=execution_id,
            llm_call_id=llm_call_id,
            kind=kind,
            channel=channel,
            role=role,
            content_ref=content_ref,
            parent_id=parent_id,
            causation_id=causation_id,
            visibility=visibility,
            context_generation=context_generation,
            context_candidate=context_candidate,
            occurred_at=f.utc_now() if occurred_at is None else occurred_at,
            metadata={} if metadata is None else metadata,
        )

    def with_sequence(self, sequence: int) -> Self:
        """A copy carrying the journal position it is appended at (> 0)."""
        return replace(self, sequence=f.positive(sequence, "sequence"))
