"""Fixtures of the domain Persistence suite: one fresh store per test on each backend.

``persistence`` is parametrized over ``memory``, ``sqlite`` and ``postgresql``
and closed after the test. ``durable_store`` covers only the two SQL
backends and can ``reopen()`` the same database in a fresh ``Persistence``
(the durability tests: nothing may live only in the old object's memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from nenjim.infrastructure.persistence import Persistence

BACKENDS = ["memory", "sqlite", "postgresql"]
DURABLE_BACKENDS = ["sqlite", "postgresql"]


class Store:
    """A store under test: its kind, its URL and the ``Persistence`` currently open on it."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self._opened: list[Persistence] = []
        self.persistence = self._open()

    @property
    def durable(self) -> bool:
        """Whether a fresh ``Persistence`` on the same URL sees the same state."""
        return self.kind != "memory"

    def _open(self) -> Persistence:
        opened = Persistence.in_memory() if self.kind == "memory" else Persistence.open(self.url)
        self._opened.append(opened)
        return opened

    def reopen(self) -> Persistence:
        """Close the current ``Persistence`` and open a fresh one on the same database."""
        if not self.durable:
            raise AssertionError("an in-memory store cannot be reopened")
        self.persistence.close()
        self.persistence = self._open()
        return self.persistence

    def close(self) -> None:
        """Close every ``Persistence`` this store opened (closing twice is harmless)."""
        for opened in self._opened:
            opened.close()


def _url(kind: str, request: pytest.FixtureRequest) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        directory = request.getfixturevalue("tmp_path_factory").mktemp("p")
        return f"sqlite://{directory / 'state.db'}"
    url: str = request.getfixturevalue("postgres_schema_url")
    return url


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh store of each backend kind in turn."""
    opened = Store(request.param, _url(request.param, request))
    yield opened
    opened.close()


@pytest.fixture
def persistence(store: Store) -> Persistence:
    """The ``Persistence`` of a fresh store (memory, SQLite, PostgreSQL)."""
    return store.persistence


@pytest.fixture(params=DURABLE_BACKENDS)
def durable_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh SQL store (SQLite, PostgreSQL) whose ``reopen()`` opens the same database."""
    opened = Store(request.param, _url(request.param, request))
    yield opened
    opened.close()


@pytest.fixture
def reopen(durable_store: Store) -> Callable[[], Persistence]:
    """``reopen()``: close the durable store's Persistence and open a fresh one."""
    return durable_store.reopen
