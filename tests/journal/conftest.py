"""Fixtures for the Journal tests: an in-memory ingestion and a root directory."""

from __future__ import annotations

import pytest

from journal.impl.ref.ingestion import JournalIngestion
from journal.impl.ref.log import JournalLog
from projections.journal_chains import JournalChainsProjection


@pytest.fixture
def log() -> JournalLog:
    """An empty in-memory Journal log."""
    return JournalLog()


@pytest.fixture
def ingestion(log: JournalLog) -> JournalIngestion:
    """Ingestion over ``log`` with a fresh projection."""
    return JournalIngestion(log, JournalChainsProjection())
