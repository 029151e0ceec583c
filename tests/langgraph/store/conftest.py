"""The Store suite's stores: NenjimStore on every kind, and LangGraph's own SQL stores.

``new_store(ttl=None)`` opens a fresh, empty store of the implementation the
test is parametrized with: ``nenjim-memory``, ``nenjim-sqlite``,
``nenjim-postgresql``, and the references ``ref-sqlite`` (``SqliteStore``)
and ``ref-postgres`` (``PostgresStore`` on a schema of its own).

Scenarios marked ``waits`` sleep whole seconds on the references (SqliteStore keeps
time to the second): they run on the references only with
``NENJIM_TEST_REFERENCE_WAITS=1``, and on nenjim's stores always. The TTL expiry and
the expired-before-the-sweep scenarios, unmarked, keep the references in every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import psycopg
import pytest
from langgraph.store.base import BaseStore, TTLConfig
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from postgres_schemas import scratch_schema
from psycopg.rows import dict_row

from nenjim.langgraph import NenjimStore

NENJIM = ("nenjim-memory", "nenjim-sqlite", "nenjim-postgresql")
REFERENCES = ("ref-sqlite", "ref-postgres")
IMPLEMENTATIONS = NENJIM + REFERENCES

NewStore = Callable[..., BaseStore]


REFERENCE_WAITS = os.environ.get("NENJIM_TEST_REFERENCE_WAITS") == "1"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``impl``: every implementation, but the references only where the scenario does
    not wait or ``NENJIM_TEST_REFERENCE_WAITS=1`` asks for them."""
    if "impl" in metafunc.fixturenames:
        waits = metafunc.definition.get_closest_marker("waits") is not None
        chosen = NENJIM if waits and not REFERENCE_WAITS else IMPLEMENTATIONS
        metafunc.parametrize("impl", chosen)


@pytest.fixture
def new_store(
    impl: str,
    nenjim_new_store: Callable[[str], str],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[NewStore]:
    """``new_store(ttl=None)``: a fresh store of ``impl``, closed after the test."""
    with ExitStack() as stack:

        def new(ttl: TTLConfig | None = None) -> BaseStore:
            if impl in NENJIM:
                url = nenjim_new_store(impl.removeprefix("nenjim-"))
                return stack.enter_context(NenjimStore.from_conn_string(url, ttl=ttl))
            if impl == "ref-sqlite":
                path = tmp_path_factory.mktemp("ref-store") / "store.db"
                sqlite_store = stack.enter_context(SqliteStore.from_conn_string(str(path), ttl=ttl))
                sqlite_store.setup()
                return sqlite_store
            return _postgres_reference(stack, request.getfixturevalue("postgres_url"), ttl)

        yield new


def _postgres_reference(stack: ExitStack, url: str, ttl: TTLConfig | None) -> PostgresStore:
    schema = scratch_schema(stack, url)
    conn = stack.enter_context(
        psycopg.connect(
            url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={schema}",
        )
    )
    store = PostgresStore(conn, ttl=ttl)
    store.setup()
    return store
