"""Which store a command uses, and opening a Journal on it.

The store is ``--store URL``, else ``$NENJIM_STORE_URL`` (:func:`chosen_store`).
``--journal NAME`` selects the Journal named NAME, which the store must hold
(:func:`journal_store`; on PostgreSQL it lives in the schema ``journal_NAME``
unless the URL's ``?schema=`` names one). :func:`open_journal` loads a Journal
root, in memory or on a store; :func:`open_log` reads a store's Journal log and
writes nothing; :func:`move_root` gives a store to the path its root moved to;
:func:`append_revisions` appends revision texts to a store's Journal, without a root.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

from nenjim.admin import Progress
from nenjim.admin.errors import MissingExtraError
from nenjim.infrastructure.store.kinds import kind_of_url
from nenjim.infrastructure.store.urls import STORE_URL_VARIABLE, redact
from nenjim.journal.impl.ref import (
    JournalAppender,
    JournalAssembly,
    RevisionSource,
    build_journal,
    move_root,
)
from nenjim.journal.impl.ref.log import (
    JournalLog,
    check_journal_name,
    describe_identity,
    journal_store_url,
    name_identity,
)
from nenjim.journal.model import JournalRevision

__all__ = [
    "STORE_URL_VARIABLE",
    "JournalAssembly",
    "JournalLog",
    "JournalRevision",
    "append_revisions",
    "check_journal_name",
    "chosen_store",
    "describe_identity",
    "journal_identity",
    "journal_store",
    "move_root",
    "open_journal",
    "open_log",
    "redact",
]


def chosen_store(given: str | None) -> str | None:
    """``given`` (``--store``), else ``$NENJIM_STORE_URL``, else ``None``.

    A URL of a kind whose driver is not installed (PostgreSQL's, without the
    ``postgres`` extra) raises :class:`MissingExtraError`.
    """
    store = given or os.environ.get(STORE_URL_VARIABLE) or None
    kind = None if store is None else kind_of_url(store)
    if store is not None and kind is not None and kind.drivers:
        try:
            for driver in kind.drivers:
                importlib.import_module(driver)
        except ImportError:
            raise MissingExtraError(f"{redact(store)}: {kind.install}") from None
    return store


def journal_identity(name: str | None) -> str | None:
    """The identity of the Journal named ``name``, or ``None`` for none."""
    return None if name is None else name_identity(name)


def journal_store(url: str, identity: str | None) -> str:
    """The URL of the store of the Journal ``identity`` at ``url`` (on PostgreSQL
    its schema, unless ``url`` names one), checked to hold that Journal; ``url``
    itself when ``identity`` is ``None``."""
    if identity is None:
        return url
    JournalLog(url, create=False, identity=identity).close()  # refuses another Journal
    return journal_store_url(url, identity)


@contextmanager
def open_journal(
    root: str, *, store: str | None, journal: str | None, progress: Progress | None
) -> Iterator[JournalAssembly]:
    """The Journal over ``root`` on ``store`` (``None``: in memory), named ``journal``,
    started (loading everything, telling ``progress``), stopped afterwards."""
    assembly = build_journal(root, store=store, journal=journal, progress=progress)
    try:
        assembly.process.start()
        yield assembly
    finally:
        assembly.process.stop()


@contextmanager
def open_log(store: str, identity: str | None) -> Iterator[JournalLog]:
    """The Journal log of ``identity`` (``None``: any Journal's) in the existing ``store``,
    opened to read only: nothing is created or written. Closed afterwards."""
    log = JournalLog(store, read_only=True, identity=identity)
    try:
        yield log
    finally:
        log.close()


def append_revisions(
    store: str, files: list[str], text: bytes | None, *, journal: str | None
) -> tuple[JournalRevision, ...]:
    """Append the revisions of ``files`` (and ``text``, the bytes of one more text read from
    standard input) to the Journal of ``store`` (named ``journal``, which may then be a new
    store), all in one transaction or none; the newly accepted ones."""
    sources = [RevisionSource.of_file(path) for path in files]
    if text is not None:
        sources.append(RevisionSource(text))
    with JournalAppender(store, journal=journal) as appender:
        return appender.append_sources(sources)
