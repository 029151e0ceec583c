"""On SQLite a batch of Store reads runs in the backend's turn with the decoding of its items
(``Backend.in_turn``): one thread's decoding never runs beside another's, which would take
the interpreter lock at each of its SQLite calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nenjim.infrastructure.langgraph.store import operations
from nenjim.langgraph import NenjimStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NenjimStore]:
    with NenjimStore.from_conn_string(f"sqlite:{tmp_path / 'store.db'}") as opened:
        yield opened


def test_reads_of_many_threads_decode_one_at_a_time(
    store: NenjimStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(12):
        store.put(("users", f"u{n % 4}"), f"k{n}", {"n": n, "kind": "fact"})
    inside, most, guard = [0], [0], threading.Lock()
    decode, of_payload = operations.decode_item, operations.item_of_payload

    def counted(function: Any) -> Any:
        def run(argument: Any) -> Any:
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            try:
                time.sleep(0.001)
                return function(argument)
            finally:
                with guard:
                    inside[0] -= 1

        return run

    monkeypatch.setattr(operations, "decode_item", counted(decode))
    monkeypatch.setattr(operations, "item_of_payload", counted(of_payload))

    def reader(user: int) -> None:
        for _ in range(5):
            found = store.get(("users", f"u{user}"), f"k{user}")
            assert found is not None
            assert found.value["n"] == user
            hits = store.search(("users", f"u{user}"), filter={"kind": "fact"})
            assert sorted(hit.key for hit in hits) == sorted(f"k{n}" for n in range(user, 12, 4))

    threads = [threading.Thread(target=reader, args=(user,)) for user in range(4) for _ in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert most[0] == 1
