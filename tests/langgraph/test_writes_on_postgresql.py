"""On PostgreSQL a task's pending writes whose values are all inline are one statement
without ``BEGIN`` and ``COMMIT`` (after one read of the checkpoint's row and the task's):
the task's row is all they write. Writes with a value stored as a blob still run in one
transaction, and a task's index already stored is kept either way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from checkpoints import checkpoint
from sent_statements import record_statements

from nenjim.langgraph import NenjimSaver


@pytest.fixture
def saver(postgres_schema_url: str) -> Iterator[NenjimSaver]:
    with NenjimSaver.from_conn_string(postgres_schema_url) as opened:
        yield opened


def _config(checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: NenjimSaver) -> Any:
    metadata: Any = {"source": "input", "step": -1, "parents": {}}
    return saver.put(_config(), checkpoint(), metadata, {})


def test_inline_writes_are_one_statement_and_blob_writes_one_transaction(
    saver: NenjimSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _put(saver)
    sent = record_statements(monkeypatch, psycopg.Cursor)
    saver.put_writes(config, [("a", 1), ("b", "x" * 300)], "task")
    assert sent == ["SELECT", "WITH"]  # the two rows read together, then the insert
    sent.clear()
    saver.put_writes(config, [("a", 9)], "task")  # index 0 of the task is stored: kept
    assert sent == ["SELECT"]
    sent.clear()
    saver.put_writes(config, [("a", 9), ("b", 9), ("e", 5)], "task")  # index 2 is new
    assert sent == ["SELECT", "WITH"]  # the row replaced at the revision read
    sent.clear()
    big = bytes(range(256)) * 8  # incompressible and past 1 KiB: a blob
    saver.put_writes(config, [("d", big)], "other")
    assert sent[0] == "BEGIN"
    found = saver.get_tuple(config)
    assert found is not None
    writes = {(task, channel): value for task, channel, value in found.pending_writes or ()}
    assert writes == {
        ("task", "a"): 1,
        ("task", "b"): "x" * 300,
        ("task", "e"): 5,
        ("other", "d"): big,
    }
