"""The ``memory:`` store kind: everything a store held in this process needs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nenjim.infrastructure.store.kinds import StoreKind

KIND = StoreKind(
    name="memory",
    scheme="memory:",
    url_pattern="memory:$",
    examples=("memory:",),
    log_factory="nenjim.infrastructure.memory.log:ClaimingMemoryFactory",
    prepare_log="nenjim.infrastructure.memory.log:prepare_log",
    backend="nenjim.infrastructure.memory.storage:InMemoryBackend",
    new_test_store="nenjim.infrastructure.memory:new_test_store",
    projections="nenjim.infrastructure.memory.projections:recorder_for",
)


def new_test_store(
    directory: Callable[[], Path], server: Callable[[], str]
) -> tuple[str, Callable[[], None]]:
    """A fresh store in this process: every ``memory:`` log is a new, empty one."""
    return "memory:", lambda: None
