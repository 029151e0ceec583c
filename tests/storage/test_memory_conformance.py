"""The shipped conformance kit run against the in-memory backend."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import Backend, Resource
from nenjim.infrastructure.storage.testing import (
    BackendFactory,
    StorageDeclarationContract,
    StorageGuardsContract,
    StorageLifecycleContract,
    StorageLimitsContract,
    StorageNamesContract,
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
    """Neutral storage primitives."""


class TestInMemoryTransactions(StorageTransactionContract):
    """Transaction boundaries and the scope rules."""


class TestInMemoryDeclarations(StorageDeclarationContract):
    """Resource declarations and resolution."""


class TestInMemoryGuards(StorageGuardsContract):
    """Every guard kind under every write and every condition kind."""


class TestInMemoryNames(StorageNamesContract):
    """One naming rule, applied when a resource is declared."""


class TestInMemoryValidation(StorageValidationContract):
    """Scalar and attribute validation."""


class TestInMemoryValues(StorageValuesContract):
    """Capabilities, errors, DurableRecord and entry values."""


class TestInMemoryLifecycle(StorageLifecycleContract):
    """close() and the order in which scopes close."""


class TestInMemoryLimits(StorageLimitsContract):
    """Integer, text, size and nesting limits, alike on every backend."""
