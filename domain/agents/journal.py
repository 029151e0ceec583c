"""``AgentJournalRecord``: one immutable entry of an Agent's append-only journal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.immutable import immutable


@immutable
@dataclass(frozen=True, slots=True)
class AgentJournalRecord(f.Checked):
    """A journal entry (record type ``phronomy.journal_record``).

    ``sequence`` is ``None`` until the record is appended: the journal
    assigns it (it equals the stream position). ``kind``, ``channel``,
    ``role`` and ``visibility`` are open vocabularies of non-empty text.
    The content itself lives in the content store; ``content_ref`` names it.
    """

    record_id: str = field(metadata=f.checked(f.identifier))
    agent_id: str = field(metadata=f.checked(f.identifier))
    sequence: int | None = field(metadata=f.checked(f.optional_positive))
    execution_id: str | None = field(metadata=f.checked(f.optional_text))
    llm_call_id: str | None = field(metadata=f.checked(f.optional_text))
    kind: str = field(metadata=f.checked(f.text))
    channel: str = field(metadata=f.checked(f.text))
    role: str | None = field(metadata=f.checked(f.optional_text))
    content_ref: str | None = field(metadata=f.checked(f.optional_text))
    parent_id: str | None = field(metadata=f.checked(f.optional_text))
    causation_id: str | None = field(metadata=f.checked(f.optional_text))
    visibility: str = field(metadata=f.checked(f.text))
    context_generation: int = field(metadata=f.checked(f.count))
    context_candidate: bool = field(metadata=f.checked(f.flag))
    occurred_at: datetime = field(metadata=f.checked(f.timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

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
