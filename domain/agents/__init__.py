"""Agent durable values: roots, executions, journal records and Handoff states.

Pure values, free of storage: frozen dataclasses whose collections are
tuples and read-only mappings and whose timestamps are aware UTC datetimes.
Transitions (``evolve``) return new values with the revision advanced by
one. Where they are stored is not the domain's business: the repository
interfaces are in :mod:`domain.persistence.repositories`, their
implementation in ``infrastructure.persistence``.
"""

from domain.agents.execution import (
    ACTIVE_STATUSES,
    EXECUTION_STATUSES,
    LLM_CALL_STATUSES,
    TERMINAL_STATUSES,
    AgentExecution,
    LLMCallRecord,
)
from domain.agents.handoff import HANDOFF_PHASES, HandoffState
from domain.agents.journal import AgentJournalRecord
from domain.agents.root import LIFECYCLE_STATUSES, AgentRoot

__all__ = [
    "ACTIVE_STATUSES",
    "EXECUTION_STATUSES",
    "HANDOFF_PHASES",
    "LIFECYCLE_STATUSES",
    "LLM_CALL_STATUSES",
    "TERMINAL_STATUSES",
    "AgentExecution",
    "AgentJournalRecord",
    "AgentRoot",
    "HandoffState",
    "LLMCallRecord",
]
