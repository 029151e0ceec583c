"""The replay kit's pytest plugin: fresh stores of every kind, and golden-file regeneration.

Enable it in a ``conftest.py``: ``pytest_plugins = ["nenjim.testing.plugin"]``.

Options:

- ``--nenjim-regenerate-golden`` (or ``NENJIM_REGENERATE_GOLDEN=1``): the
  ``nenjim_regenerate_golden`` fixture is true, so golden checks write
  their read-model files instead of comparing (run on purpose, then review
  the diff).
- ``--nenjim-postgres-url URL`` (or ``$NENJIM_TEST_PG_URL``): the PostgreSQL
  database in which PostgreSQL stores get a fresh schema each.

Fixtures:

- ``nenjim_store_url``: a fresh, empty store, once per kind (``memory``,
  ``sqlite``, ``postgresql``);
- ``nenjim_durable_store_url``: the same for ``sqlite`` and ``postgresql``;
- ``nenjim_new_store``: a factory, ``nenjim_new_store(kind)`` returns the URL
  of a fresh, empty store of that kind (as many per test as needed);
- ``nenjim_postgres_url`` (session): the PostgreSQL database; override it
  to supply your own. Without one, PostgreSQL stores are skipped, and fail
  the test when ``CI=true``;
- ``nenjim_regenerate_golden``: whether to regenerate golden files.

psycopg is imported only when a PostgreSQL store is asked for.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

STORE_KINDS = ("memory", "sqlite", "postgresql")
DURABLE_KINDS = ("sqlite", "postgresql")
REGENERATE_OPTION = "--nenjim-regenerate-golden"
REGENERATE_VARIABLE = "NENJIM_REGENERATE_GOLDEN"
POSTGRES_OPTION = "--nenjim-postgres-url"
POSTGRES_VARIABLE = "NENJIM_TEST_PG_URL"

NewStore = Callable[[str], str]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nenjim", "nenjim replay kit")
    group.addoption(
        REGENERATE_OPTION,
        action="store_true",
        help=f"write golden read-model files instead of comparing (also ${REGENERATE_VARIABLE}=1)",
    )
    group.addoption(
        POSTGRES_OPTION,
        metavar="URL",
        help=f"PostgreSQL database for postgresql stores (also ${POSTGRES_VARIABLE})",
    )


@pytest.fixture(scope="session")
def nenjim_regenerate_golden(pytestconfig: pytest.Config) -> bool:
    """Whether golden checks write their files instead of comparing."""
    return (
        bool(pytestconfig.getoption(REGENERATE_OPTION))
        or os.environ.get(REGENERATE_VARIABLE) == "1"
    )


@pytest.fixture(scope="session")
def nenjim_postgres_url(pytestconfig: pytest.Config) -> str:
    """The PostgreSQL database for postgresql stores (override to supply your own)."""
    url = pytestconfig.getoption(POSTGRES_OPTION) or os.environ.get(POSTGRES_VARIABLE)
    if not url:
        reason = f"no PostgreSQL database: give {POSTGRES_OPTION} URL or ${POSTGRES_VARIABLE}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return str(url)


@pytest.fixture
def nenjim_new_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NewStore]:
    """``new(kind)``: the URL of a fresh, empty store of ``kind``, removed after the test."""
    cleanups: list[Callable[[], None]] = []

    def new(kind: str) -> str:
        if kind == "memory":
            return "memory:"
        if kind == "sqlite":
            directory: Path = tmp_path_factory.mktemp("nenjim-store")
            return f"sqlite://{directory / 'store.db'}"
        if kind == "postgresql":
            base: str = request.getfixturevalue("nenjim_postgres_url")
            url, drop = _fresh_schema(base)
            cleanups.append(drop)
            return url
        raise ValueError(f"unknown store kind {kind!r}: expected one of {', '.join(STORE_KINDS)}")

    yield new
    for cleanup in reversed(cleanups):
        cleanup()


@pytest.fixture(params=STORE_KINDS)
def nenjim_store_url(request: pytest.FixtureRequest, nenjim_new_store: NewStore) -> str:
    """A fresh, empty store of each kind in turn."""
    return nenjim_new_store(request.param)


@pytest.fixture(params=DURABLE_KINDS)
def nenjim_durable_store_url(request: pytest.FixtureRequest, nenjim_new_store: NewStore) -> str:
    """A fresh, empty SQLite or PostgreSQL store, each in turn."""
    return nenjim_new_store(request.param)


def _fresh_schema(base: str) -> tuple[str, Callable[[], None]]:
    """A new schema in the database ``base`` names: its store URL, and how to drop it."""
    import psycopg  # noqa: PLC0415 - only PostgreSQL stores need the driver
    from psycopg import sql  # noqa: PLC0415

    schema = f"nenjim_test_{uuid.uuid4().hex[:16]}"
    parts = urlsplit(base)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    connection_url = urlunsplit(parts._replace(query=urlencode(query)))
    with psycopg.connect(connection_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))

    def drop() -> None:
        with psycopg.connect(connection_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    store = urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))
    return store, drop
