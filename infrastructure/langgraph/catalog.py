"""The saver's resource catalog: where a LangGraph thread's checkpoints, writes and values live.

A catalog of its own, apart from domain Persistence's: both can share one
store (one backend over both lists, or one backend each on the same URL).
Resource ids are stored in every row and event: they never change.

This module imports no LangGraph package, so the storage audit can name
these resources on a machine without the ``langgraph`` extra.
"""

from __future__ import annotations

from nenjim.infrastructure.storage import Resource

THREADS = Resource("langgraph.threads", "streams")
"""One stream per ``(thread_id, checkpoint_ns)``, the log of that thread.

Each checkpoint is appended at the head its writer read, with the checkpoint
id as entry id (so a checkpoint is never stored twice); deletes and prunes
purge the entries of what they remove and append a removal entry.
"""

CHECKPOINTS = Resource(
    "langgraph.checkpoints",
    "records",
    attributes={"thread_id": "string", "checkpoint_ns": "string", "run_id": "nullable_string"},
    indexes={"thread": ("thread_id",), "run": ("run_id",)},
    # Most checkpoints name no run (LangGraph sets ``run_id`` only when the caller's config
    # has one): those rows stay out of the ``run`` index, and a put writes no entry there.
    sparse_indexes=("run",),
)
"""The live checkpoints (LangGraph's view), one row per checkpoint pointing at its entry.

Keyed by ``[thread_id, checkpoint_ns, checkpoint_id]`` (JSON), or its
``~sha256:`` digest when longer than a key may be (then the payload keeps
the ids); the payload is the entry's position in the thread's stream.
Attributes longer than an index takes are their digests too. Deleting a checkpoint
deletes this row (a tombstone in the log, which keeps its id from being
written again) and purges its entry from the stream.
"""

THREAD_IDS = Resource(
    "langgraph.thread_ids",
    "records",
    # ``listed`` (always true) is still written, as in stores made when listing every
    # thread (``list(None)``) scanned an index of it; that scan now takes every row by key.
    attributes={"listed": "boolean"},
)
"""Every thread id that ever had a checkpoint, keyed by itself (written with its first one;
a thread id too long for a key is keyed by its digest and kept in the payload)."""

WRITES = Resource(
    "langgraph.writes",
    "records",
    attributes={"thread_id": "string", "checkpoint_ns": "string", "checkpoint_id": "string"},
    indexes={
        "checkpoint": ("thread_id", "checkpoint_ns", "checkpoint_id"),
        "thread": ("thread_id",),
    },
)
"""Pending writes, keyed by ``[thread_id, checkpoint_ns, checkpoint_id, task_id]`` (JSON, or its
digest; attributes too long for an index are digests, and the record keeps the ids then)."""

VALUES = Resource("langgraph.values", "blobs", attributes={"type": "string", "encoding": "string"})
"""Serialized channel and write values, keyed by ``sha256:<hex>`` of their type and bytes
and ``@<scope>`` of their thread (see :mod:`nenjim.infrastructure.langgraph.values`).

``type`` is the serializer's type tag; ``encoding`` is ``zlib`` or ``identity``.
"""

CATALOG: tuple[Resource, ...] = (THREADS, CHECKPOINTS, THREAD_IDS, WRITES, VALUES)
"""Every resource of the saver."""
