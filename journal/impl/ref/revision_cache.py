"""A bounded, least-recently-used cache of an artifact's chain, for a Journal served from its store.

A chain read from the store holds its rows; each revision's text is read
from the log and parsed the first time a query needs it, then kept. The
cache holds at most ``size`` chains: the least recently used one is dropped
to make room, so a process's memory stays bounded whatever the number of
artifacts or revisions the store holds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from nenjim.projections.journal_chains import ChainSnapshot

DEFAULT_CACHE_SIZE = 10_000
"""Chains a store-served Journal keeps by default (see ``docs/scaling.md``)."""


class ChainCache:
    """At most ``size`` chains by coordinate text, least recently used dropped first."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        if type(size) is not int or size < 1:
            raise ValueError(f"a chain cache holds at least one chain, not {size!r}")
        self.size = size
        self._chains: OrderedDict[str, ChainSnapshot] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        """Lookups (:meth:`get`) that found their chain held."""
        self.misses = 0
        """Lookups that did not (the chain was then read from the store)."""

    def __len__(self) -> int:
        return len(self._chains)

    def __contains__(self, name: object) -> bool:
        """Whether the chain of ``name`` is held (not a lookup: nothing is counted)."""
        return name in self._chains

    def get(self, name: str) -> ChainSnapshot | None:
        """The chain of ``name`` if held (now the most recently used), else ``None``; counted
        in :attr:`hits` or :attr:`misses`."""
        with self._lock:
            chain = self._chains.get(name)
            if chain is None:
                self.misses += 1
            else:
                self.hits += 1
                self._chains.move_to_end(name)
            return chain

    def put(self, name: str, chain: ChainSnapshot) -> None:
        """Hold ``chain`` for ``name``, dropping the least recently used beyond the size."""
        with self._lock:
            self._chains[name] = chain
            self._chains.move_to_end(name)
            while len(self._chains) > self.size:
                self._chains.popitem(last=False)

    def forget(self, names: Iterable[str]) -> None:
        """Drop the chains of ``names`` (their artifacts have new revisions)."""
        with self._lock:
            for name in names:
                self._chains.pop(name, None)

    def clear(self) -> None:
        """Drop every chain."""
        with self._lock:
            self._chains.clear()
