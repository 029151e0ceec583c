"""LangGraph checkpoints for the saver's tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.base.id import uuid6


def checkpoint(values: Mapping[str, Any] | None = None) -> Checkpoint:
    """A checkpoint with a new id holding ``values``, each channel at version 1."""
    values = dict(values or {})
    return {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": values,
        "channel_versions": dict.fromkeys(values, 1),
        "versions_seen": {},
        "updated_channels": None,
    }
