"""The shipped conformance kit run against ``SQLiteBackend`` (a new file per backend)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from nenjim.infrastructure.sqlite.storage import SQLiteBackend
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
def make_backend(tmp_path: Path) -> Iterator[BackendFactory]:
    """A fresh SQLite file per call, closed after the test."""
    opened: list[SQLiteBackend] = []

    def make(resources: Sequence[Resource]) -> Backend:
        backend = SQLiteBackend(resources, tmp_path / f"storage-{len(opened)}.db")
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()


class TestSQLitePrimitives(StoragePrimitivesContract):
    """Neutral storage primitives."""


class TestSQLiteTransactions(StorageTransactionContract):
    """Transaction boundaries and the scope rules."""


class TestSQLiteDeclarations(StorageDeclarationContract):
    """Resource declarations and resolution."""


class TestSQLiteGuards(StorageGuardsContract):
    """Every guard kind under every write and every condition kind."""


class TestSQLiteNames(StorageNamesContract):
    """One naming rule, applied when a resource is declared."""


class TestSQLiteValidation(StorageValidationContract):
    """Scalar and attribute validation."""


class TestSQLiteValues(StorageValuesContract):
    """Capabilities, errors, DurableRecord and entry values."""


class TestSQLiteLifecycle(StorageLifecycleContract):
    """close() and the order in which scopes close."""


class TestSQLiteLimits(StorageLimitsContract):
    """Integer, text, size and nesting limits, alike on every backend."""
