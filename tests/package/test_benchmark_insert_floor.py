"""The by-hand writer of ``benchmarks.probes.insert_floor`` writes what the engine's insert does."""

from __future__ import annotations

import json
import sqlite3
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import pytest

from benchmarks.probes.insert_floor import by_hand
from benchmarks.storage import OPS, RESOURCES, spi_steps
from nenjim.infrastructure.storage import open_backend
from nenjim.infrastructure.storage.sql.events import record_stream
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS, EXECUTIONS_ID

ROOT = "ours-0"


def _written(path: Path, key: str) -> tuple[tuple[Any, ...], dict[str, Any], tuple[Any, ...]]:
    """The records row of ``key`` (without the key), its event's state (without key and
    time) and the event's originator, version and topic."""
    with closing(sqlite3.connect(path)) as connection:
        row = connection.execute(
            "SELECT resource, revision, attributes, record_type, format_version, payload, "
            "log_version FROM storage_records WHERE resource = ? AND key = ?",
            (EXECUTIONS_ID, key),
        ).fetchone()
        originator, version, topic, state = connection.execute(
            "SELECT originator_id, originator_version, topic, state FROM storage_events "
            "WHERE originator_id = ?",
            (str(record_stream(EXECUTIONS_ID, key)),),
        ).fetchone()
    event = json.loads(state)
    assert event.pop("key") == key
    event.pop("recorded_at")
    return row, event, (originator == str(record_stream(EXECUTIONS_ID, key)), version, topic)


def test_the_by_hand_insert_writes_the_engine_s_row_and_event(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with ExitStack() as stack:
        backend = open_backend(f"sqlite:///{path}", RESOURCES)
        stack.callback(backend.close)
        (ours,) = spi_steps(backend, next(o for o in OPS if o.name == "insert"), 1)
        ours()  # the engine's insert of ours-0/x0
        with by_hand(path, ROOT) as insert:
            insert()  # ours-0/h0
        stored = backend.view.records(EXECUTIONS).fetch(f"{ROOT}/h0")
        engine = backend.view.records(EXECUTIONS).fetch(f"{ROOT}/x0")
    assert (stored.revision, dict(stored.attributes)) == (0, {"owner": ROOT, "active": False})
    assert stored.record == engine.record
    assert _written(path, f"{ROOT}/h0") == _written(path, f"{ROOT}/x0")


def test_the_by_hand_insert_refuses_a_missing_anchor_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with ExitStack() as stack:
        backend = open_backend(f"sqlite:///{path}", RESOURCES)
        stack.callback(backend.close)
        insert = stack.enter_context(by_hand(path, "no-such-root"))
        with pytest.raises(RuntimeError, match="anchor no-such-root missing"):
            insert()
        assert backend.view.records(EXECUTIONS).read("no-such-root/h0") is None
