"""The shipped conformance kit run against ``PostgresBackend`` (a new schema per backend)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nenjim.infrastructure.postgresql.storage import PostgresBackend
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
def make_backend(postgres_url: str, postgres_schema_url: str) -> Iterator[BackendFactory]:
    """The test's fresh schema for the first backend, another new schema for each later one."""
    opened: list[PostgresBackend] = []
    extra_schemas: list[str] = []

    def make(resources: Sequence[Resource]) -> Backend:
        url = postgres_schema_url
        if opened:
            schema = f"t_{uuid.uuid4().hex[:16]}"
            extra_schemas.append(schema)
            query = f"schema={schema}&pool_size=1&max_overflow=7"
            url = urlunsplit(urlsplit(postgres_url)._replace(query=query))
        backend = PostgresBackend(resources, url)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()
    if extra_schemas:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            for schema in extra_schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class TestPostgresPrimitives(StoragePrimitivesContract):
    """Neutral storage primitives."""


class TestPostgresTransactions(StorageTransactionContract):
    """Transaction boundaries and the scope rules."""


class TestPostgresDeclarations(StorageDeclarationContract):
    """Resource declarations and resolution."""


class TestPostgresGuards(StorageGuardsContract):
    """Every guard kind under every write and every condition kind."""


class TestPostgresNames(StorageNamesContract):
    """One naming rule, applied when a resource is declared."""


class TestPostgresValidation(StorageValidationContract):
    """Scalar and attribute validation."""


class TestPostgresValues(StorageValuesContract):
    """Capabilities, errors, DurableRecord and entry values."""


class TestPostgresLifecycle(StorageLifecycleContract):
    """close() and the order in which scopes close."""


class TestPostgresLimits(StorageLimitsContract):
    """Integer, text, size and nesting limits, alike on every backend."""
