"""The two implementations of ``JournalService`` that the Journal's conformance tests run on.

``worldview``: ``build_journal`` over a root, started (the whole worldview in
memory). ``stored``: the same root loaded once into a durable store, then a
``StoredJournal`` started over that store (answers read from the store's
chain table). A ``memory:`` store lives only in its process, so the stored
kind keeps its store in an SQLite file beside the root there.
"""

from __future__ import annotations

from pathlib import Path

from nenjim.journal import JournalService
from nenjim.journal.impl.ref import StoredJournal, build_journal

SERVICE_KINDS = ["worldview", "stored"]


def durable_url(store_url: str, where: Path) -> str:
    """``store_url``, or an SQLite file under ``where`` for a ``memory:`` store."""
    return f"sqlite:///{where / 'stored.db'}" if store_url.startswith("memory") else store_url


def started_service(kind: str, root: Path, store_url: str, where: Path) -> JournalService:
    """A started service of ``kind`` over the files of ``root``."""
    if kind == "worldview":
        assembly = build_journal(root, store=store_url)
        assembly.process.start()
        return assembly.service
    url = durable_url(store_url, where)
    loaded = build_journal(root, store=url)
    loaded.process.start()
    loaded.process.stop()
    stored = StoredJournal(url, root=root)
    stored.start()
    return stored
