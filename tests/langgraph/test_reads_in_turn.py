"""On SQLite the saver's reads run in the backend's turn (``Backend.in_turn``) with the work
on their answers: decoding the values of one ``get_tuple`` or ``list`` never runs beside
another thread's, which would take the interpreter lock at each of its SQLite calls. The
block ends before ``list`` yields: a slow consumer holds no other thread up, and ``list``
decodes only a few checkpoints ahead of its consumer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from nenjim.langgraph import NenjimSaver


class _OverlapSerde(JsonPlusSerializer):
    """Counts how many threads decode at once (each decode stays a moment)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.most = 0
        self.guard = threading.Lock()

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        with self.guard:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            time.sleep(0.001)
            return super().loads_typed(data)
        finally:
            with self.guard:
                self.inside -= 1


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[NenjimSaver]:
    with NenjimSaver.from_conn_string(f"sqlite:{tmp_path / 'store.db'}") as opened:
        opened.serde = _OverlapSerde()
        yield opened


def _thread(saver: NenjimSaver, thread: str) -> None:
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step in range(3):
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": "2026-12-07T00:00:00+00:00",
            "channel_values": {"messages": [f"m{step}"], "step": step},
            "channel_versions": {"messages": step + 1, "step": step + 1},
            "versions_seen": {},
            "updated_channels": None,
        }
        metadata: Any = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, {"messages": step + 1, "step": step + 1})
        saver.put_writes(config, [("messages", f"w{step}")], f"task-{step}")


def test_reads_of_many_threads_decode_one_at_a_time(saver: NenjimSaver) -> None:
    names = [f"t{n}" for n in range(6)]
    for name in names:
        _thread(saver, name)
    serde = saver.serde
    assert isinstance(serde, _OverlapSerde)

    def reader(name: str) -> None:
        config: Any = {"configurable": {"thread_id": name, "checkpoint_ns": ""}}
        for _ in range(5):
            found = saver.get_tuple(config)
            assert found is not None
            assert found.checkpoint["channel_values"]["step"] == 2
            assert len(list(saver.list(config))) == 3
            then = saver.as_of(config, datetime.now(UTC))
            assert then is not None
            assert then.checkpoint["channel_values"]["step"] == 2

    threads = [threading.Thread(target=reader, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert serde.most == 1


def test_a_slow_consumer_of_list_holds_no_other_reader_up(saver: NenjimSaver) -> None:
    _thread(saver, "a")
    _thread(saver, "b")
    listing = saver.list({"configurable": {"thread_id": "a", "checkpoint_ns": ""}})
    first = next(listing)  # the consumer stops between items
    assert first.checkpoint["channel_values"]["step"] == 2
    got: list[Any] = []
    other = threading.Thread(
        target=lambda: got.append(
            saver.get_tuple({"configurable": {"thread_id": "b", "checkpoint_ns": ""}})
        )
    )
    other.start()
    other.join(timeout=10)
    assert not other.is_alive()
    assert got[0] is not None
    assert len(list(listing)) == 2


def test_list_decodes_a_few_checkpoints_ahead_of_its_consumer(saver: NenjimSaver) -> None:
    config: Any = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    for step in range(40):
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": "2026-12-07T00:00:00+00:00",
            "channel_values": {"step": step},
            "channel_versions": {"step": step + 1},
            "versions_seen": {},
            "updated_channels": None,
        }
        metadata: Any = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, {"step": step + 1})
    serde = saver.serde
    assert isinstance(serde, _OverlapSerde)
    decoded = [0]
    loads = serde.loads_typed

    def counted(data: tuple[str, bytes]) -> Any:
        decoded[0] += 1
        return loads(data)

    serde.loads_typed = counted  # type: ignore[method-assign]
    listing = saver.list({"configurable": {"thread_id": "long", "checkpoint_ns": ""}})
    newest = next(listing)
    assert newest.checkpoint["channel_values"] == {"step": 39}
    assert 1 <= decoded[0] <= 16  # one value each, of the first batch at most
    assert [t.checkpoint["channel_values"]["step"] for t in listing] == list(range(38, -1, -1))
    assert decoded[0] == 40
