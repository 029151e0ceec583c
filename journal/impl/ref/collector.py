"""The start's pause of Python's cyclic garbage collector.

A start builds hundreds of thousands of objects that live as long as the
service (chains, rows, values). Each time the heap grows by a quarter the
cyclic collector walks all of it, finds nothing to free, and on a warm restart
of 10,000 revisions that walk was ~15% of the start. Reference counting still
frees everything else at once; only the collection of reference cycles waits
until the start ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_collection_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; restore it as it was, even on an error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
