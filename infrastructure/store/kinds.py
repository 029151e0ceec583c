"""The store kinds: the one place a store's backend is chosen.

Each kind of store (``memory:``, ``sqlite:``, ``postgresql://``) is a package
that declares its :class:`StoreKind` as ``KIND`` in its ``__init__.py``;
:data:`KINDS` lists those packages, one a line. Everything of a kind is named
by topic (``module:attribute``) and imported only when a store of that kind
is opened, as ``eventsourcing`` does with ``PERSISTENCE_MODULE``: nothing
here, and nothing in the store layer, imports a kind's package or its
driver, so ``memory:`` and ``sqlite:`` stores never load psycopg. Adding a
store kind is adding its package and a line to :data:`KINDS`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from nenjim.infrastructure.store.errors import StoreUnavailableError

KINDS = (
    "nenjim.infrastructure.memory",
    "nenjim.infrastructure.sqlite",
    "nenjim.infrastructure.postgresql",
)
"""The package of each store kind, in the order fixtures and messages list them."""


class StoreMissingError(StoreUnavailableError):
    """A store URL that names no existing store (reading one creates none)."""


@dataclass(frozen=True, slots=True)
class StoreKind:
    """Everything of one kind of store; each topic is imported when first used."""

    name: str
    """The kind's one name (``memory``, ``sqlite``, ``postgresql``)."""
    scheme: str
    """How messages name the kind's URLs (``sqlite:``)."""
    url_pattern: str
    """What the kind's URLs match at their start (a regular expression)."""
    examples: tuple[str, ...]
    """URLs of the kind, as messages suggest them."""
    log_factory: str
    """The log recorders' factory (``eventsourcing``'s ``PERSISTENCE_MODULE``)."""
    prepare_log: str
    """``(location, env, create) -> bool``: readies the store for a log application
    (may refuse it: ``StoreUnavailableError``); whether it can only be read."""
    backend: str
    """The Storage SPI backend class; ``at(resources, location)`` opens it."""
    new_test_store: str
    """``(directory, server) -> (url, cleanup)``: a fresh, empty store for a test, given
    a way to make a scratch directory and the URL of a database server."""
    projections: str
    """``(log) -> ProjectionRecorder``: the projections kept in the store of a Journal log
    (its application) or of a storage backend."""
    wakeup: str | None = None
    """``(log, stop) -> Wakeup``: what wakes a follower of the log when a commit appends
    to it (None: the kind has no notifications, followers poll)."""
    storage_session: str | None = None
    """``(location) -> context manager of a Session or None``: one read-only transaction on
    the storage log of the existing store, ``None`` without one; nothing is created
    (None: the kind's storage log lives in one process)."""
    parse_url: str | None = None
    """``(url) -> env``: the URL's ``eventsourcing`` settings, checked
    (``UnsupportedStoreError``); None: it has none."""
    reader: str | None = None
    """``(location) -> context manager of a connection``: one read-only transaction, on one
    consistent state, of the existing store; ``StoreMissingError`` at once if there is none
    (nothing is created). None: not durable."""
    log_store: str | None = None
    """The class of ``(location)`` that moves the logs of a store (None: not durable)."""
    maintenance: str | None = None
    """The class of ``(location)`` that audits and repairs a store (None: not durable)."""
    where: str = "store {url}"
    """How messages name a store: formatted with its (redacted) ``url`` and its settings."""
    schema_setting: str | None = None
    """The setting that names the schema a store lives in (None: stores have none)."""
    drivers: tuple[str, ...] = ()
    """The modules only this kind needs, and :attr:`install`, how to install them."""
    install: str = ""
    served_by_server: bool = False
    """Whether a store of the kind is a server's, its reads waiting on round trips (a
    process serving several clients overlaps those waits in threads); False: its reads run
    in this process, a file's pages or memory."""

    @property
    def durable(self) -> bool:
        """True unless a store of the kind lives only in its process."""
        return self.log_store is not None

    def load(self, topic: str | None) -> Any:
        """What ``topic`` (one of the kind's) names, imported now (``LookupError``: the kind
        has no such part, e.g. a reader of ``memory:`` stores)."""
        if topic is None:
            raise LookupError(f"{self.name} stores have no such part")
        module, _, attribute = topic.partition(":")
        return getattr(importlib.import_module(module), attribute)


@cache
def store_kinds() -> tuple[StoreKind, ...]:
    """Every store kind, in the order of :data:`KINDS` (importing no driver)."""
    return tuple(importlib.import_module(package).KIND for package in KINDS)


def store_kind(name: str) -> StoreKind:
    """The kind named ``name``; ``ValueError`` for none."""
    for kind in store_kinds():
        if kind.name == name:
            return kind
    names = ", ".join(kind.name for kind in store_kinds())
    raise ValueError(f"unknown store kind {name!r}: expected one of {names}")


def durable_store_hint() -> str:
    """What messages suggest instead of a store that keeps nothing: the durable kinds."""
    schemes = ", ".join(kind.scheme for kind in store_kinds() if kind.durable)
    return f"a durable store ({schemes})"


def kind_of_url(url: str) -> StoreKind | None:
    """The kind whose URLs ``url`` is one of, or ``None``."""
    return next((kind for kind in store_kinds() if re.match(kind.url_pattern, url)), None)
