"""Running a function on several threads at once, losing neither an error nor a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

_T = TypeVar("_T")


def run_together(function: Callable[[int], _T], count: int, timeout: float = 60.0) -> list[_T]:
    """``function(0) ... function(count - 1)``, each on its own thread, released together.

    Every call must finish within ``timeout`` (else ``AssertionError``); the
    results come back in call order, and the first call that raised raises
    here, so no thread's exception is dropped.
    """
    start = threading.Barrier(count)

    def released(index: int) -> _T:
        start.wait(timeout)
        return function(index)

    pool = ThreadPoolExecutor(max_workers=count)
    futures = [pool.submit(released, index) for index in range(count)]
    _, pending = wait(futures, timeout=timeout)
    pool.shutdown(wait=not pending)
    assert not pending, f"{len(pending)} of {count} threads did not finish within {timeout} s"
    return [future.result() for future in futures]
