"""Agent durable values: roots, executions, journal records and Handoff states.

Pure values, free of storage: frozen dataclasses whose collections are
tuples and read-only mappings and whose timestamps are aware UTC datetimes.
Transitions (``evolve``) return new values with the revision advanced by
one. Where they are stored is not the domain's business: the repository
interfaces are in :mod:`nenjim.domain.persistence.repositories`, their
implementation in ``nenjim.infrastructure.persistence``.
"""

from nenjim.domain.agents.execution import (
    ACTIVE_STATUSES,
    EXECUTION_STATUSES,
    LLM_CALL_STATUSES,
    TERMINAL_STATUSES,
    AgentExecution,
    LLMCallRecord,
)
from nenjim.domain.agents.handoff import HANDOFF_PHASES, HandoffState
from nenjim.domain.agents.journal import AgentJournalRecord
from nenjim.domain.agents.root import LIFECYCLE_STATUSES, AgentRoot

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
