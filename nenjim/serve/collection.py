"""Garbage collection for a serving process: no pause that grows with the chain cache.

A served Journal keeps up to ``--chain-cache`` artifacts' chains in memory,
about 50 objects a chain that CPython's cycle collector tracks (half a
million at the default 10,000 chains), none of them in a reference cycle. A
full collection walks every tracked object: under load one ran every few
seconds and stopped the server for 70-90 ms, which was the p99 of a paced
load (``benchmarks.journal_serve_scale``).

:class:`YoungOnlyCollection` runs beside the server. Every
:data:`FREEZE_SECONDS` it collects the young generations (what the last
requests made and dropped: a few thousand objects at most) and then freezes
every tracked object (``gc.freeze``: a constant-time move to a generation no
automatic collection walks). A full collection then walks only what came
since the last freeze. A frozen object is still freed by reference counting
when the cache drops it; only a reference cycle that outlived two young
collections and died later is held back, until every :data:`FULL_SECONDS`
the frozen objects are unfrozen and one full collection frees it: one pause
in that time, not one every few seconds.
"""

from __future__ import annotations

import gc
import threading

FREEZE_SECONDS = 1.0
"""How often the young generations are collected and everything older frozen."""
FULL_SECONDS = 600.0
"""How often everything is unfrozen and collected: the longest a frozen cycle is held."""


class YoungOnlyCollection:
    """The collection policy above, on a daemon thread, from :meth:`start` to :meth:`stop`."""

    def __init__(
        self, freeze_seconds: float = FREEZE_SECONDS, full_seconds: float = FULL_SECONDS
    ) -> None:
        self._freeze_seconds = freeze_seconds
        self._fulls_every = max(1, round(full_seconds / freeze_seconds))
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nenjim-gc", daemon=True)
        self.ticks = 0
        """How many freezes have run."""

    def start(self) -> None:
        """Start collecting this way."""
        self._thread.start()

    def stop(self) -> None:
        """Stop, unfreeze and collect everything once: the process is as before."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        self.full()

    def tick(self) -> None:
        """Collect the young generations, then freeze every tracked object."""
        gc.collect(1)
        gc.freeze()
        self.ticks += 1

    def full(self) -> None:
        """Unfreeze every object and run one full collection."""
        gc.unfreeze()
        gc.collect()

    def _run(self) -> None:
        while not self._stopped.wait(self._freeze_seconds):
            if self.ticks and self.ticks % self._fulls_every == 0:
                self.full()
            self.tick()
