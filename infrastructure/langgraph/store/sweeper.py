"""The TTL sweeper: a daemon thread that purges expired items every few minutes."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_MINUTES = 5.0


class Sweeper:
    """Runs ``sweep`` every ``interval`` minutes on a thread of its own until stopped."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        self._sweep = sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, interval_minutes: float) -> concurrent.futures.Future[None]:
        """Start the thread (once); a future done when it stops, whose cancel stops it."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda done: self._stop.set() if done.cancelled() else None)
        if self.running:
            logger.info("the store's TTL sweeper already runs")
            return future
        self._stop.clear()
        seconds = float(interval_minutes) * 60

        def loop() -> None:
            while not self._stop.wait(seconds):
                try:
                    purged = self._sweep()
                    if purged:
                        logger.info("store TTL sweep purged %d expired items", purged)
                except Exception:
                    logger.exception("store TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._thread = threading.Thread(target=loop, daemon=True, name="nenjim-store-ttl")
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; whether it stopped within ``timeout`` seconds (or was not running)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return True
        self._stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True
