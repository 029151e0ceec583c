"""``benchmarks.startup.load``: the timed region is the start alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import startup
from benchmarks.sample_roots import generate_root


@pytest.fixture
def root(tmp_path: Path) -> tuple[Path, int]:
    written = generate_root(tmp_path / "root", artifacts=3, revisions=2, seed=1)
    return tmp_path / "root", written


def test_the_timed_region_opens_and_starts_and_the_check_follows_it(
    root: tuple[Path, int], tmp_path: Path
) -> None:
    path, written = root
    store = tmp_path / "store.db"
    seen: list[bool] = []

    def timed(start: Callable[[], None]) -> None:
        seen.append(store.exists())  # nothing opened before the region
        start()
        seen.append(store.exists())

    assert startup.load(path, f"sqlite:///{store}", written, timed) > 0
    assert seen == [False, True]


def test_a_start_that_loads_another_count_is_refused(root: tuple[Path, int]) -> None:
    path, written = root
    with pytest.raises(RuntimeError, match=f"loaded {written} revisions from memory:, expected"):
        startup.load(path, "memory:", written + 1)
