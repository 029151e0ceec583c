"""Shared fixtures: stores by URL, PostgreSQL discovery, resource hygiene."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from postgres_server import postgres_server

from nenjim.infrastructure.log import LogApplication
from nenjim.infrastructure.store.kinds import store_kinds

# The replay kit's fixtures (nenjim_store_url, nenjim_new_store, ...), as users enable them;
# pytester runs a user's suite that enables them (tests/kit/test_plugin.py).
pytest_plugins = ["nenjim.testing.plugin", "pytester"]

STORES = [kind.name for kind in store_kinds()]
DURABLE_STORES = [kind.name for kind in store_kinds() if kind.durable]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A reachable PostgreSQL server; missing one fails under ``CI=true``, else skips."""
    try:
        with postgres_server() as url:
            yield url
    except (OSError, psycopg.Error, FileNotFoundError) as error:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"PostgreSQL is required in CI and could not be reached or started: {error}"
            )
        pytest.skip(f"no PostgreSQL available: {error}")


@pytest.fixture(scope="session")
def nenjim_postgres_url(postgres_url: str) -> str:
    """The replay kit's PostgreSQL stores live on the suite's server."""
    return postgres_url


@pytest.fixture
def postgres_schema_url(postgres_url: str) -> Iterator[str]:
    """A store URL on a fresh schema of its own, dropped afterwards."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urlsplit(postgres_url)
    yield urlunsplit(parts._replace(query=f"schema={schema}&pool_size=1&max_overflow=7"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def close_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close every log application a test opened (their pools hold connections)."""
    opened: list[LogApplication] = []
    original = LogApplication.__init__

    def recording_init(self: LogApplication, store: str | None = None, **options: Any) -> None:
        original(self, store, **options)
        opened.append(self)

    monkeypatch.setattr(LogApplication, "__init__", recording_init)
    yield
    for app in opened:
        app.close()


@pytest.fixture(params=STORES)
def store_url(
    request: pytest.FixtureRequest, close_logs: None, nenjim_new_store: Callable[[str], str]
) -> str:
    """A fresh store of each kind in turn (outside the test's tmp_path)."""
    return nenjim_new_store(request.param)


@pytest.fixture(params=DURABLE_STORES)
def durable_store_url(
    request: pytest.FixtureRequest, close_logs: None, nenjim_new_store: Callable[[str], str]
) -> str:
    """A fresh store of each durable kind in turn."""
    return nenjim_new_store(request.param)
