"""``NenjimStore`` and ``AsyncNenjimStore``: LangGraph's long-term memory Store on the log.

Both implement ``langgraph.store.base.BaseStore`` (``batch`` and ``abatch``,
hence ``get``/``put``/``delete``/``search``/``list_namespaces`` and their
async forms), with TTLs (``TTLConfig``) and a sweeper that purges what
expired. The Storage SPI is synchronous: the async methods run the same
work in a worker thread. They differ in how they are opened (``with`` or
``async with ... from_conn_string``) and in the sweeper's form (a thread
and a ``Future``, or an ``asyncio`` task), as LangGraph's stores do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self

from langgraph.store.base import BaseStore, Op, Result, TTLConfig

from nenjim.infrastructure.langgraph.store.catalog import STORE_CATALOG
from nenjim.infrastructure.langgraph.store.long_keys import move_digested_items
from nenjim.infrastructure.langgraph.store.operations import run_batch, sweep
from nenjim.infrastructure.langgraph.store.sweeper import DEFAULT_INTERVAL_MINUTES, Sweeper
from nenjim.infrastructure.storage import Backend, open_backend

INDEX_REFUSED = (
    "NenjimStore has no semantic search: index= (embeddings) is not supported; "
    "search with filter, limit and offset"
)


class _Store(BaseStore):
    """What both stores share; see the module docstring."""

    supports_ttl = True

    def __init__(
        self, backend: Backend, *, ttl: TTLConfig | None = None, index: Any = None
    ) -> None:
        """A store over ``backend``, which must register :data:`STORE_CATALOG`. Items an
        earlier build stored under a long key of its form move to this build's keys.

        ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` minutes,
        ``refresh_on_read``, ``omit_expired``, ``sweep_interval_minutes``).
        ``index`` (semantic search) is refused.
        """
        if index is not None:
            raise NotImplementedError(INDEX_REFUSED)
        move_digested_items(backend)
        self.backend = backend
        self.ttl_config = ttl
        self._sweeper = Sweeper(self._sweep)

    def close(self) -> None:
        """Stop the sweeper and release the backend's connections (the context managers
        call it)."""
        self._sweeper.stop(timeout=1.0)
        self.backend.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: their reads first, then their puts (the last put of a key wins)."""
        omit = bool(self.ttl_config and self.ttl_config.get("omit_expired"))
        return run_batch(self.backend, ops, omit_expired=omit)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`, in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _sweep(self) -> int:
        return sweep(self.backend)

    def _interval(self, sweep_interval_minutes: float | None) -> float:
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        return float(sweep_interval_minutes or configured or DEFAULT_INTERVAL_MINUTES)


class NenjimStore(_Store):
    """A LangGraph long-term memory Store on nenjim's append-only log."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, ttl: TTLConfig | None = None, index: Any = None
    ) -> Iterator[Self]:
        """A store on ``conn_string`` (``memory:``, ``sqlite:path.db``,
        ``postgresql://...?schema=...``), closed when the block ends; its tables are
        created when missing."""
        if index is not None:
            raise NotImplementedError(INDEX_REFUSED)
        backend = open_backend(conn_string, STORE_CATALOG)
        try:
            store = cls(backend, ttl=ttl)
        except BaseException:
            backend.close()
            raise
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """Nothing to do: opening the store created its tables (idempotent)."""
        self.backend.ensure_open()

    def sweep_ttl(self) -> int:
        """Purge every item whose TTL expired (erased from the log); how many."""
        return self._sweep()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) on a
        daemon thread; without a TTL config, nothing (a future already done)."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return self._sweeper.start(self._interval(sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)


class AsyncNenjimStore(_Store):
    """The same Store, opened, closed and swept without blocking the event loop."""

    _task: asyncio.Task[None] | None = None

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, ttl: TTLConfig | None = None, index: Any = None
    ) -> AsyncIterator[Self]:
        """A store on ``conn_string`` (see ``NenjimStore.from_conn_string``)."""
        if index is not None:
            raise NotImplementedError(INDEX_REFUSED)
        backend = await asyncio.to_thread(open_backend, conn_string, STORE_CATALOG)
        try:
            store = await asyncio.to_thread(cls, backend, ttl=ttl)
        except BaseException:
            await asyncio.to_thread(backend.close)
            raise
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper()
            await asyncio.to_thread(store.close)

    async def setup(self) -> None:
        """Nothing to do: opening the store created its tables (idempotent)."""
        self.backend.ensure_open()

    async def sweep_ttl(self) -> int:
        """Purge every item whose TTL expired (erased from the log); how many."""
        return await asyncio.to_thread(self._sweep)

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> asyncio.Task[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a task
        of the running loop; without a TTL config, a task that does nothing."""
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._task is not None and not self._task.done():
            return self._task
        seconds = self._interval(sweep_interval_minutes) * 60

        async def loop() -> None:
            while True:
                await asyncio.sleep(seconds)
                with contextlib.suppress(Exception):
                    await self.sweep_ttl()

        self._task = asyncio.create_task(loop())
        return self._task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Cancel the sweeper task; whether it ended within ``timeout`` seconds."""
        task, self._task = self._task, None
        if task is None or task.done():
            return True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout)
        return task.done()
