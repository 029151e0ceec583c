"""Pauses of Python's cyclic garbage collector, for bulk loads and folds.

A start or a fold builds hundreds of thousands of objects that live as long as
the service (chains, rows, values), and makes no reference cycles. Each time the
heap grows by a quarter the cyclic collector would walk all of it and find
nothing to free; on a warm restart of 10,000 revisions that walk was ~15% of
the start. Reference counting still frees everything else at once; only the
collection of reference cycles waits until the pause ends.

When a pause ends, the objects made during it go to the collector's oldest
generation as they are. Otherwise the first collection after the pause walks
every one of them once more (~5 ms after a warm restart of 10,000 revisions),
to find what the pause already knew: they are live, and they hold no cycles.
That is skipped while the program holds objects frozen (``gc.freeze()``, as a
server does before it forks): those stay frozen, and the collection runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_collection_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block, then restore it as it was, even on an
    error; a pause inside another, or with the collector off, changes nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            # Everything tracked into the oldest generation at once, without a walk.
            gc.freeze()
            gc.unfreeze()
        gc.enable()
