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
from nenjim.infrastructure.store.kinds import store_kind, store_kinds

STORES = [kind.name for kind in store_kinds()]
DURABLE_STORES = [kind.name for kind in store_kinds() if kind.durable]


class Store:
    """A store under test: its kind, its URL and the ``Persistence`` currently open on it."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self.durable = store_kind(kind).durable
        """Whether a fresh ``Persistence`` on the same URL sees the same state."""
        self._opened: list[Persistence] = []
        self.persistence = self._open()

    def _open(self) -> Persistence:
        opened = Persistence.open(self.url)
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


@pytest.fixture(params=STORES)
def store(
    request: pytest.FixtureRequest, nenjim_new_store: Callable[[str], str]
) -> Iterator[Store]:
    """A fresh store of each backend kind in turn."""
    opened = Store(request.param, nenjim_new_store(request.param))
    yield opened
    opened.close()


@pytest.fixture
def persistence(store: Store) -> Persistence:
    """The ``Persistence`` of a fresh store (memory, SQLite, PostgreSQL)."""
    return store.persistence


@pytest.fixture(params=DURABLE_STORES)
def durable_store(
    request: pytest.FixtureRequest, nenjim_new_store: Callable[[str], str]
) -> Iterator[Store]:
    """A fresh SQL store (SQLite, PostgreSQL) whose ``reopen()`` opens the same database."""
    opened = Store(request.param, nenjim_new_store(request.param))
    yield opened
    opened.close()


@pytest.fixture
def reopen(durable_store: Store) -> Callable[[], Persistence]:
    """``reopen()``: close the durable store's Persistence and open a fresh one."""
    return durable_store.reopen
