"""The shipped conformance kit run against the in-memory backend."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from infrastructure.storage import Backend, Resource
from infrastructure.storage.memory import InMemoryBackend
from infrastructure.storage.testing import (
    BackendFactory,
    StorageDeclarationContract,
    StorageLifecycleContract,
    StorageLimitsContract,
    StoragePrimitivesContract,
    StorageTransactionContract,
    StorageValidationContract,
    StorageValuesContract,
)


@pytest.fixture
def make_backend() -> BackendFactory:
    """A fresh in-memory backend per call; nothing to tear down."""

    def make(resources: Sequence[Resource]) -> Backend:
        return InMemoryBackend(resources=resources)

    return make


class TestInMemoryPrimitives(StoragePrimitivesContract):
    """§3.1 neutral storage primitives."""


class TestInMemoryTransactions(StorageTransactionContract):
    """§3.2 transaction boundaries and the §1.13 scope rules."""


class TestInMemoryDeclarations(StorageDeclarationContract):
    """§3.12 resource declarations and resolution."""


class TestInMemoryValidation(StorageValidationContract):
    """§1.2 scalar and attribute validation."""


class TestInMemoryValues(StorageValuesContract):
    """Capabilities, errors, DurableRecord and entry values."""


class TestInMemoryLifecycle(StorageLifecycleContract):
    """close() and the order in which scopes close."""


class TestInMemoryLimits(StorageLimitsContract):
    """Integer, text, size and nesting limits, alike on every backend."""
