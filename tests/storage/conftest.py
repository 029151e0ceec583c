"""Fixtures of the storage tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nenjim.infrastructure.postgresql.storage import PostgresBackend
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES


@pytest.fixture
def postgres_backend(postgres_schema_url: str) -> Iterator[PostgresBackend]:
    """A PostgreSQL backend of the fixture resources on a fresh schema of its own."""
    opened = PostgresBackend(FIXTURE_RESOURCES, postgres_schema_url)
    yield opened
    opened.close()
