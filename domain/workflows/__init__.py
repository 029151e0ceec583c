"""Workflow durable values: the snapshot value domain and the stored Workflow state.

Pure values, free of storage; the repository interface is in
:mod:`nenjim.domain.persistence.repositories`.
"""

from nenjim.domain.workflows.snapshot import (
    SNAPSHOT_KEYS,
    WorkflowState,
    WorkflowValueError,
    freeze_snapshot,
    normalize_snapshot,
)

__all__ = [
    "SNAPSHOT_KEYS",
    "WorkflowState",
    "WorkflowValueError",
    "freeze_snapshot",
    "normalize_snapshot",
]
