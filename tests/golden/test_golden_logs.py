"""Golden logs: recorded logs kept as files, whose replay must keep producing the same read models.

Each ``*.log`` here is a log export (``nenjim log export``) with its read
models beside it (``*.log.read-models.json``): every revision the Journal
serves, every record, history, stream and blob, and what the repositories
load. Replayed into a fresh store of every kind, the log must produce
exactly those read models, so a change in a fold, a codec or a parser
shows up here as a failing test naming what changed.

- ``journal-fixture.log``: the SQLite Journal log of
  ``tests/fixtures/stores/journal.db`` (51 revisions of 24 artifacts, written
  by an earlier build under the event names of the day);
- ``storage-fixture.log``: the storage log of
  ``tests/fixtures/stores/storage.db`` (all eight repositories, rows deleted
  since included).

When a change is meant to change a read model, regenerate on purpose and
review the diff: ``pytest tests/golden --nenjim-regenerate-golden``. The
logs themselves are never regenerated: they are the input that must stay
readable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nenjim.testing import GoldenLog

GOLDEN = Path(__file__).resolve().parent
LOGS = sorted(path.name for path in GOLDEN.glob("*.log"))


def test_the_golden_logs_are_here() -> None:
    assert LOGS == ["journal-fixture.log", "storage-fixture.log"]


@pytest.mark.parametrize("name", LOGS)
def test_a_golden_log_replays_to_its_read_models(
    name: str, nenjim_store_url: str, nenjim_regenerate_golden: bool
) -> None:
    GoldenLog(GOLDEN / name).check(nenjim_store_url, regenerate=nenjim_regenerate_golden)
