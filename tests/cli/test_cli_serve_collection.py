"""The serving process's garbage collection: young generations collected and the rest frozen
each tick, so that a full collection walks only what is new; everything unfrozen and collected
now and then, so that a cycle frozen alive and dropped later is still freed."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator

import pytest

from nenjim.serve.collection import YoungOnlyCollection


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def _cycle() -> tuple[Node, weakref.ref[Node]]:
    first, second = Node(), Node()
    first.other, second.other = second, first
    return first, weakref.ref(second)


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.collect()
    yield
    gc.unfreeze()
    gc.collect()


def test_a_tick_frees_young_cycles_and_freezes_the_rest() -> None:
    collection = YoungOnlyCollection()
    kept = Node()
    dropped, alive = _cycle()
    del dropped

    collection.tick()

    assert alive() is None  # collected before the freeze, never frozen
    assert gc.get_freeze_count() > 0
    assert kept.other is None


def test_a_cycle_frozen_alive_is_freed_by_the_next_full_collection() -> None:
    collection = YoungOnlyCollection()
    held, alive = _cycle()
    collection.tick()  # frozen while still referenced
    del held
    gc.collect()
    collection.tick()
    assert alive() is not None  # frozen: no collection walks it

    collection.full()

    assert alive() is None
    assert gc.get_freeze_count() == 0


def test_the_thread_freezes_and_collects_fully_at_its_intervals_and_stops_unfrozen() -> None:
    collection = YoungOnlyCollection(freeze_seconds=0.005, full_seconds=0.02)
    collection.start()
    held, alive = _cycle()
    deadline = time.monotonic() + 10
    while collection.ticks < 3:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    del held
    while alive() is not None:  # a full collection comes every fourth tick
        assert time.monotonic() < deadline
        time.sleep(0.005)

    collection.stop()

    assert gc.get_freeze_count() == 0
