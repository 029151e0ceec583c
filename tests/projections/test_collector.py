"""The pause of the cyclic garbage collector around bulk loads and folds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from nenjim.projections.collector import cyclic_collection_paused


class _Held:
    """A tracked object of its own type, to find among the collector's generations."""


def _generation_of(target: object) -> int | None:
    for generation in range(3):
        if any(item is target for item in gc.get_objects(generation=generation)):
            return generation
    return None


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_a_pause_turns_the_collector_off_and_back_on_even_after_an_error() -> None:
    assert gc.isenabled()
    with cyclic_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="inside"), cyclic_collection_paused():
        raise RuntimeError("inside")
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_collector_off() -> None:
    with cyclic_collection_paused():
        with cyclic_collection_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_leaves_a_collector_the_program_turned_off_turned_off() -> None:
    gc.disable()
    with cyclic_collection_paused():
        pass
    assert not gc.isenabled()


def test_what_a_pause_made_is_in_the_oldest_generation_once_it_ends() -> None:
    gc.collect()
    with cyclic_collection_paused():
        made = _Held()
        assert _generation_of(made) == 0
    assert _generation_of(made) == 2
    assert gc.get_count()[0] < 10  # no young objects left to walk at the next collection


def test_objects_the_program_froze_stay_frozen_and_a_pause_leaves_its_own_young() -> None:
    frozen = _Held()
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with cyclic_collection_paused():
            made = _Held()
        assert gc.get_freeze_count() == count
        assert _generation_of(frozen) is None  # still in the permanent generation
        assert _generation_of(made) in (0, 1)
    finally:
        gc.unfreeze()
