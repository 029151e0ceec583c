"""The shipped conformance kit run against the backend of every store kind (a new store
per backend)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from nenjim.infrastructure.storage import Backend, Resource, open_backend
from nenjim.infrastructure.storage.testing import (
    BackendFactory,
    StorageDeclarationContract,
    StorageGuardsContract,
    StorageLifecycleContract,
    StorageLimitsContract,
    StorageNamesContract,
    StoragePrimitivesContract,
    StoragePurgeContract,
    StorageReadTogetherContract,
    StorageSelectionContract,
    StorageTransactionContract,
    StorageValidationContract,
    StorageValuesContract,
)
from nenjim.infrastructure.store.kinds import store_kinds
from nenjim.testing.plugin import NewStore


@pytest.fixture(params=[kind.name for kind in store_kinds()])
def make_backend(
    request: pytest.FixtureRequest, nenjim_new_store: NewStore
) -> Iterator[BackendFactory]:
    """A backend on a fresh store of the kind per call, closed after the test."""
    opened: list[Backend] = []

    def make(resources: Sequence[Resource]) -> Backend:
        backend = open_backend(nenjim_new_store(request.param), resources)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()


class TestPrimitives(StoragePrimitivesContract):
    """Neutral storage primitives."""


class TestTransactions(StorageTransactionContract):
    """Transaction boundaries and the scope rules."""


class TestDeclarations(StorageDeclarationContract):
    """Resource declarations and resolution."""


class TestGuards(StorageGuardsContract):
    """Every guard kind under every write and every condition kind."""


class TestNames(StorageNamesContract):
    """One naming rule, applied when a resource is declared."""


class TestValidation(StorageValidationContract):
    """Scalar and attribute validation."""


class TestValues(StorageValuesContract):
    """Capabilities, errors, DurableRecord and entry values."""


class TestLifecycle(StorageLifecycleContract):
    """close() and the order in which scopes close."""


class TestLimits(StorageLimitsContract):
    """Integer, text, size and nesting limits, alike on every backend."""


class TestPurges(StoragePurgeContract):
    """Purges of records, streams and blobs."""


class TestSelections(StorageSelectionContract):
    """Selections of records by their payloads."""


class TestReadTogether(StorageReadTogetherContract):
    """Prepared reads run together."""
