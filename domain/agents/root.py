"""``AgentRoot``: the durable identity and watermark of one Agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.immutable import immutable

LIFECYCLE_STATUSES = frozenset({"idle", "active", "suspended", "closed", "invalidated"})


@immutable
@dataclass(frozen=True, slots=True)
class AgentRoot(f.Revised):
    """The durable root of an Agent (record type ``phronomy.agent_root``).

    ``agent_revision`` is the compare-and-swap revision of the row; the
    watermark pairs it with ``journal_position``. Timestamps are aware UTC
    datetimes; ``metadata`` is a deep read-only JSON object.
    """

    _revision = "agent_revision"
    _fixed = frozenset({"agent_id", "created_at"})

    agent_id: str = field(metadata=f.checked(f.identifier))
    agent_definition_id: str = field(metadata=f.checked(f.text))
    agent_definition_version: str = field(metadata=f.checked(f.text))
    agent_revision: int = field(metadata=f.checked(f.count))
    context_revision: int = field(metadata=f.checked(f.count))
    journal_position: int = field(metadata=f.checked(f.count))
    lifecycle_status: str = field(metadata=f.checked(f.one_of(LIFECYCLE_STATUSES)))
    transcript_generation: int = field(metadata=f.checked(f.count))
    created_at: datetime = field(metadata=f.checked(f.timestamp))
    updated_at: datetime = field(metadata=f.checked(f.timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

    @classmethod
    def create(
        cls,
        agent_id: str,
        *,
        definition_id: str,
        definition_version: str = "1",
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Self:
        """A new, idle root at revision 0 with an empty journal (position 0)."""
        now = f.utc_now() if created_at is None else created_at
        return cls(
            agent_id=agent_id,
            agent_definition_id=definition_id,
            agent_definition_version=definition_version,
            agent_revision=0,
            context_revision=0,
            journal_position=0,
            lifecycle_status="idle",
            transcript_generation=0,
            created_at=now,
            updated_at=now,
            metadata={} if metadata is None else metadata,
        )
