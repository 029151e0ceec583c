"""``HandoffState``: which Agent of a Handoff chain answers now, anchored on the main Agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from nenjim.domain import durable_fields as f
from nenjim.immutable import immutable

HANDOFF_PHASES = frozenset({"stable", "target_pending", "target_active"})


@immutable
@dataclass(frozen=True, slots=True)
class HandoffState(f.Revised):
    """The Handoff anchor of a main Agent (record type ``phronomy.handoff_state``).

    Revisions start at 1. Outside the ``stable`` phase a Handoff is in
    flight and must name the exact target execution
    (``pending_target_execution_id``).
    """

    _revision = "handoff_revision"
    _fixed = frozenset({"main_agent_id", "created_at"})

    main_agent_id: str = field(metadata=f.checked(f.identifier))
    handoff_revision: int = field(metadata=f.checked(f.positive))
    active_agent_id: str = field(metadata=f.checked(f.identifier))
    active_handoff_context_ref: str | None = field(metadata=f.checked(f.optional_text))
    phase: str = field(metadata=f.checked(f.one_of(HANDOFF_PHASES)))
    pending_source_execution_id: str | None = field(metadata=f.checked(f.optional_text))
    pending_target_execution_id: str | None = field(metadata=f.checked(f.optional_text))
    created_at: datetime = field(metadata=f.checked(f.timestamp))
    updated_at: datetime = field(metadata=f.checked(f.timestamp))
    metadata: Mapping[str, Any] = field(hash=False, metadata=f.checked(f.json_object))

    def __post_init__(self) -> None:
        f.check_fields(self)
        if self.phase != "stable" and not self.pending_target_execution_id:
            raise ValueError(f"a Handoff in phase {self.phase!r} needs pending_target_execution_id")

    @classmethod
    def create(
        cls,
        main_agent_id: str,
        *,
        active_agent_id: str,
        active_handoff_context_ref: str | None = None,
        phase: str = "stable",
        pending_source_execution_id: str | None = None,
        pending_target_execution_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Self:
        """A first Handoff state at revision 1 (``stable`` unless told otherwise)."""
        now = f.utc_now() if created_at is None else created_at
        return cls(
            main_agent_id=main_agent_id,
            handoff_revision=1,
            active_agent_id=active_agent_id,
            active_handoff_context_ref=active_handoff_context_ref,
            phase=phase,
            pending_source_execution_id=pending_source_execution_id,
            pending_target_execution_id=pending_target_execution_id,
            created_at=now,
            updated_at=now,
            metadata={} if metadata is None else metadata,
        )
