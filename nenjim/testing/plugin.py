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
  ``sqlite``, ``postgresql``: every kind of
  :mod:`nenjim.infrastructure.store.kinds`);
- ``nenjim_durable_store_url``: the same for the durable kinds (``sqlite`` and
  ``postgresql``);
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
from collections.abc import Callable, Iterator

import pytest

from nenjim.infrastructure.store.kinds import store_kind, store_kinds

STORE_KINDS = tuple(kind.name for kind in store_kinds())
DURABLE_KINDS = tuple(kind.name for kind in store_kinds() if kind.durable)
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

    def new(name: str) -> str:
        kind = store_kind(name)
        url: str
        url, cleanup = kind.load(kind.new_test_store)(
            lambda: tmp_path_factory.mktemp("nenjim-store"),
            lambda: request.getfixturevalue("nenjim_postgres_url"),
        )
        cleanups.append(cleanup)
        return url

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
