"""The whole Journal suite runs once per store: memory, SQLite and PostgreSQL.

Every test here gets ``NENJIM_STORE_URL`` set to a fresh store of its
parameter's kind, so ``build_journal(root)`` and ``JournalLog()`` open it.
"""

from __future__ import annotations

import pytest

from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection


@pytest.fixture(autouse=True)
def journal_store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each Journal test on each store kind."""
    monkeypatch.setenv("NENJIM_STORE_URL", store_url)
    return store_url


@pytest.fixture
def log(journal_store: str) -> JournalLog:
    """An empty Journal log on this test's store."""
    return JournalLog()


@pytest.fixture
def ingestion(log: JournalLog) -> JournalIngestion:
    """Ingestion over ``log`` with a fresh projection."""
    return JournalIngestion(log, JournalChainsProjection())
