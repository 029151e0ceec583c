"""``NenjimSaver`` and ``AsyncNenjimSaver``: LangGraph checkpointers on the storage log.

Both implement every method of LangGraph's ``BaseCheckpointSaver`` in its
sync and async families: ``put``, ``put_writes``, ``get_tuple``, ``list``,
``delete_thread``, ``delete_for_runs``, ``copy_thread`` and ``prune``. The
Storage SPI is synchronous, so the async methods run the same work in a
worker thread (as ``aiosqlite`` does) and never block the event loop; the
sync methods work in any thread, the loop's own included. They differ in
how they are opened: ``with NenjimSaver.from_conn_string(url)`` or
``async with AsyncNenjimSaver.from_conn_string(url)`` (the async one opens
and closes the store off the loop, and its ``setup`` is a coroutine).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from functools import partial
from typing import Any, Self, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from nenjim.infrastructure.langgraph import delta, history
from nenjim.infrastructure.langgraph.catalog import CATALOG
from nenjim.infrastructure.langgraph.checkpoint_log import (
    CheckpointLog,
    LoadedCheckpoint,
    NewCheckpoint,
    NewWrite,
)
from nenjim.infrastructure.langgraph.stored import (
    ThreadAddress,
    checkpoint_texts,
)
from nenjim.infrastructure.langgraph.values import encode, scope_of
from nenjim.infrastructure.storage import (
    Backend,
    NotFoundError,
    SerializationError,
    View,
    open_backend,
)

PRUNE_STRATEGIES = ("keep_latest", "delete")
_READS = 3
"""How often ``get_tuple`` reads the newest checkpoint when other writers delete it meanwhile."""
_DECODED_TOGETHER = 16
"""How many checkpoints ``list`` decodes in one turn of the backend before yielding them."""
_DELTA_METADATA = ("counters_since_delta_snapshot", "delta_writes_versioned")


class _Saver(BaseCheckpointSaver[str]):
    """The methods both savers share; see the module docstring."""

    log: CheckpointLog

    def __init__(self, backend: Backend, *, serde: SerializerProtocol | None = None) -> None:
        """A saver over ``backend``, which must register :data:`CATALOG` (``open_backend(url,
        CATALOG)``, or a backend over both this and domain Persistence's catalog)."""
        super().__init__(serde=serde)
        self.log = CheckpointLog(backend)

    @property
    def backend(self) -> Backend:
        """The storage backend the saver writes to."""
        return self.log.backend

    def close(self) -> None:
        """Release the backend's connections (the context managers call it)."""
        self.log.backend.close()

    # reads
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's newest one; ``None`` if none.

        A checkpoint deleted by another writer while it is read (between its entry and its
        values) reads as deleted: ``None``, or the newest checkpoint left.
        """
        address, checkpoint_id = _address(config), get_checkpoint_id(config)
        with self.log.backend.in_turn():
            for _ in range(_READS):
                loaded = self.log.get(address, checkpoint_id)
                if loaded is None:
                    return None
                found = self._live_tuple(loaded)
                if found is not None or checkpoint_id is not None:
                    return found
        return None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Live checkpoints, newest first.

        ``config`` selects a thread (``None``: every thread), a namespace
        (absent: every namespace) and a checkpoint id; ``filter`` keeps those
        whose metadata has every key with an equal JSON value; ``before``
        keeps ids below its checkpoint id; ``limit`` caps the count (``0`` gives
        nothing, a negative one is no limit).
        """
        configurable = (config or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id")
        checkpoint_ns = configurable.get("checkpoint_ns")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        if limit is not None and limit < 0:
            limit = None  # no limit, as in LangGraph's SqliteSaver (SQLite's LIMIT -1)
        if limit == 0:
            return
        if checkpoint_ns is not None and not isinstance(checkpoint_ns, str):
            raise TypeError(f"checkpoint_ns must be a str, got {type(checkpoint_ns).__name__}")
        turn = self.log.backend.in_turn
        with turn():
            found = self.log.select(
                thread_id=None if thread_id is None else str(thread_id),
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=configurable.get("checkpoint_id"),
                before=None if before is None else get_checkpoint_id(before),
                limit=limit,
                matches=None if not filter else partial(_matches, dict(filter)),
            )
        # Values are decoded a few checkpoints at a time, each batch in the backend's turn
        # and yielded outside it: a consumer that stops early decodes little, and one that
        # takes its time holds no other reader up.
        for start in range(0, len(found), _DECODED_TOGETHER):
            with turn():
                items = [
                    self._live_tuple(loaded) for loaded in found[start : start + _DECODED_TOGETHER]
                ]
            # An item None was deleted by another writer since it was selected.
            yield from (item for item in items if item is not None)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """What each ``DeltaChannel`` in ``channels`` is rebuilt from at the config's checkpoint
        (or the newest): the writes along its own branch since the nearest ancestor holding a
        value (the ``seed``, absent if none does), read from the thread's log in one
        transaction (see :mod:`~nenjim.infrastructure.langgraph.delta`)."""
        with self.log.backend.in_turn():
            found = delta.channel_histories(
                self.log, self.serde, _address(config), get_checkpoint_id(config), channels
            )
            return {channel: _delta_channel_history(item) for channel, item in found.items()}

    # writes
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Append a checkpoint to its thread; its parent is the config's ``checkpoint_id``.

        A parent other than the thread's newest checkpoint starts a branch,
        except for a step (metadata ``source`` ``input`` or ``loop``) that
        lost a race: one with an id below the newest's, or whose parent the
        newest checkpoint, another step, also continues. That raises
        ``CheckpointConflictError`` (another run advanced the thread).
        """
        address = _address(config)
        scope = scope_of(address.thread_id)
        checkpoint_id = checkpoint["id"]
        values = checkpoint.get("channel_values") or {}
        stored_metadata = get_serializable_checkpoint_metadata(config, metadata)
        run_id = stored_metadata.get("run_id")
        body = {key: value for key, value in checkpoint.items() if key != "channel_values"}
        self.log.put(
            NewCheckpoint(
                address=address,
                checkpoint_id=checkpoint_id,
                parent_id=get_checkpoint_id(config),
                source=stored_metadata.get("source"),
                run_id=run_id if isinstance(run_id, str) else None,
                texts=checkpoint_texts(checkpoint_id, body, stored_metadata),
                versions=dict(checkpoint.get("channel_versions") or {}),
                values={
                    channel: encode(self.serde, value, scope)
                    for channel, value in values.items()
                    if channel in new_versions
                },
                unchanged={
                    channel: partial(encode, self.serde, value, scope)
                    for channel, value in values.items()
                    if channel not in new_versions
                },
            )
        )
        return {
            "configurable": {
                "thread_id": address.thread_id,
                "checkpoint_ns": address.checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the config's checkpoint, idempotently.

        Each write is keyed by task and index (``WRITES_IDX_MAP`` for the
        special channels): a write already stored is kept, except in a batch
        of special channels only (errors, interrupts, resumes), which
        replaces what it finds.
        """
        address = _address(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            raise ValueError(
                f"put_writes needs config['configurable']['checkpoint_id'] (thread "
                f"{address.thread_id!r}, task {task_id!r})"
            )
        scope = scope_of(address.thread_id)
        entries = [
            NewWrite(channel, WRITES_IDX_MAP.get(channel, index), encode(self.serde, value, scope))
            for index, (channel, value) in enumerate(writes)
        ]
        self.log.put_writes(
            address,
            checkpoint_id,
            str(task_id),
            str(task_path),
            entries,
            overwrite=all(channel in WRITES_IDX_MAP for channel, _ in writes),
        )

    def delete_thread(self, thread_id: str) -> None:
        """Purge a thread's checkpoints, writes and values (all namespaces).

        They are erased from the log too, in one transaction; the thread's
        stream keeps one removal entry naming what went, by id and time only,
        so :meth:`as_of` tells a purged checkpoint from none
        (``CheckpointPurgedError``).
        """
        self.log.delete_threads([str(thread_id)], "delete_thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Purge the checkpoints whose metadata names a listed ``run_id``, their writes and the
        values only they used; the thread's other checkpoints stay readable."""
        names = _names(run_ids, "run_ids")
        if names:
            self.log.delete_checkpoints(lambda view: self.log.runs(view, names), "delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every live checkpoint and write of a thread to a thread without checkpoints.

        Ids, metadata, parents and order are kept; values are shared (they
        are content-addressed). A target that has checkpoints is refused
        (``CheckpointConflictError``); a source without any copies nothing.
        """
        self.log.copy_thread(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep the newest checkpoint of each namespace (``keep_latest``), or none (``delete``).

        What is pruned is purged: erased from the log with its writes and the
        values only it used, as :meth:`delete_thread` erases. ``keep_latest``
        refuses, pruning nothing, threads that use a ``DeltaChannel`` (their
        newest value is rebuilt from older checkpoints).
        """
        names = _names(thread_ids, "thread_ids")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"unknown prune strategy {strategy!r}; use one of {PRUNE_STRATEGIES}")
        if not names:
            return
        if strategy == "delete":
            self.log.delete_threads(names, "prune")
            return

        def chosen(view: View) -> Any:
            for thread_id in names:
                if any(
                    key in metadata
                    for metadata in self.log.live_metadata(view, thread_id)
                    for key in _DELTA_METADATA
                ):
                    raise NotImplementedError(
                        f"prune keep_latest cannot prune thread {thread_id!r}: it uses a "
                        "DeltaChannel, whose newest value is rebuilt from older checkpoints"
                    )
            return self.log.all_but_latest(view, names)

        self.log.delete_checkpoints(chosen, "prune")

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next channel version, in the form LangGraph's own savers use.

        A zero-padded counter and a random fraction: versions increase per
        channel and differ between branches forked from one checkpoint.
        """
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(str(current).split(".")[0])
        return f"{counter + 1:032}.{random.random():016}"

    # history beyond LangGraph's view
    def as_of(self, config: RunnableConfig, when: datetime) -> CheckpointTuple | None:
        """The checkpoint ``get_tuple(config)`` would have returned at time ``when``.

        Read from the thread's log: the newest checkpoint (or the one the
        config names) that was live at ``when``, with its pending writes as
        they stood then. ``None`` if no checkpoint was live then (the thread
        did not exist yet, or had none). If that checkpoint was purged since
        (a delete, run delete or prune erased it), ``CheckpointPurgedError``
        (a storage ``NotFoundError``) names it and when it was removed.
        ``when`` must carry a time zone; the times compared are those the
        writing processes recorded.
        """
        with self.log.backend.in_turn():
            found = history.as_of(self.log, _address(config), get_checkpoint_id(config), when)
            return None if found is None else self._tuple(found)

    # async family: the same work in a worker thread
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await asyncio.to_thread(
            partial(self.get_delta_channel_history, config=config, channels=channels)
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(partial(self.prune, thread_ids, strategy=strategy))

    async def aas_of(self, config: RunnableConfig, when: datetime) -> CheckpointTuple | None:
        """Async :meth:`as_of`."""
        return await asyncio.to_thread(self.as_of, config, when)

    # decoding
    def _live_tuple(self, loaded: LoadedCheckpoint) -> CheckpointTuple | None:
        """The checkpoint as LangGraph reads it; ``None`` if another writer deleted it (and
        purged its values) since its entry was read."""
        try:
            return self._tuple(loaded)
        except NotFoundError as missing:
            if self.log.get(loaded.address, loaded.entry.checkpoint_id) is None:
                return None
            raise SerializationError(
                f"checkpoint {loaded.entry.checkpoint_id} of thread "
                f"{loaded.address.thread_id!r} (namespace {loaded.address.checkpoint_ns!r}) "
                f"names a value that is not stored: {missing}"
            ) from missing

    def _tuple(self, loaded: LoadedCheckpoint) -> CheckpointTuple:
        address, entry = loaded.address, loaded.entry
        checkpoint, metadata = entry.fresh()
        load, serde = self.log.load, self.serde
        checkpoint["channel_values"] = {
            channel: load(serde, ref) for channel, ref in entry.values.items()
        }
        parent_id = entry.parent_id
        # Positional: a named tuple built from keywords pays for matching them, per checkpoint.
        return CheckpointTuple(
            _config(address, entry.checkpoint_id),
            cast(Checkpoint, checkpoint),
            cast(CheckpointMetadata, metadata),
            None if parent_id is None else _config(address, parent_id),
            [(write.task_id, write.channel, load(serde, write.value)) for write in loaded.writes],
        )


class NenjimSaver(_Saver):
    """A LangGraph checkpointer on nenjim's append-only log (memory:, SQLite, PostgreSQL)."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, serde: SerializerProtocol | None = None
    ) -> Iterator[Self]:
        """A saver on the store ``conn_string`` names, closed when the block ends.

        ``memory:``, ``sqlite:path.db`` / ``sqlite:///abs/path.db`` or
        ``postgresql://user@host/db?schema=...``; the store and its tables
        are created when missing.
        """
        saver = cls(open_backend(conn_string, CATALOG), serde=serde)
        try:
            yield saver
        finally:
            saver.close()

    def setup(self) -> None:
        """Nothing to do: opening the store created its tables (idempotent, like LangGraph's)."""
        self.log.backend.ensure_open()


class AsyncNenjimSaver(_Saver):
    """The same checkpointer, opened and closed without blocking the event loop."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, serde: SerializerProtocol | None = None
    ) -> AsyncIterator[Self]:
        """A saver on the store ``conn_string`` names (see ``NenjimSaver.from_conn_string``)."""
        backend = await asyncio.to_thread(open_backend, conn_string, CATALOG)
        saver = cls(backend, serde=serde)
        try:
            yield saver
        finally:
            await asyncio.to_thread(saver.close)

    async def setup(self) -> None:
        """Nothing to do: opening the store created its tables (idempotent, like LangGraph's)."""
        self.log.backend.ensure_open()


def _address(config: RunnableConfig) -> ThreadAddress:
    configurable = config.get("configurable") or {}
    if configurable.get("thread_id") is None:
        raise ValueError("a checkpoint config needs config['configurable']['thread_id']")
    checkpoint_ns = configurable.get("checkpoint_ns")
    return ThreadAddress(str(configurable["thread_id"]), checkpoint_ns or "")


def _config(address: ThreadAddress, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": address.thread_id,
            "checkpoint_ns": address.checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _delta_channel_history(found: delta.ChannelHistory) -> DeltaChannelHistory:
    history: DeltaChannelHistory = {"writes": list(found.writes)}
    if found.seeded:
        history["seed"] = found.seed
    return history


def _names(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str | bytes):
        raise TypeError(f"{what} must be a sequence of ids, not a single {type(values).__name__}")
    return [str(value) for value in values]


def _matches(wanted: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """Every wanted key is in ``metadata`` with an equal JSON value."""
    return all(
        key in metadata and _json_equal(metadata[key], value) for key, value in wanted.items()
    )


def _json_equal(stored: Any, wanted: Any) -> bool:
    """Equality of JSON values: booleans are not numbers, ``1`` equals ``1.0``, tuples are lists."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(stored, int | float) and isinstance(wanted, int | float):
        return stored == wanted
    if isinstance(stored, dict) and isinstance(wanted, Mapping):
        return stored.keys() == wanted.keys() and all(
            _json_equal(stored[key], wanted[key]) for key in stored
        )
    if isinstance(stored, list) and isinstance(wanted, list | tuple):
        return len(stored) == len(wanted) and all(
            _json_equal(a, b) for a, b in zip(stored, wanted, strict=True)
        )
    return type(stored) is type(wanted) and bool(stored == wanted)
