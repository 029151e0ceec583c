"""A thread as it stood at a past time, replayed from its stream.

The stream of ``(thread_id, checkpoint_ns)`` holds every live checkpoint and
the removal entries of the deletes, run deletes and prunes, each with the
time its writer recorded it. A removal purges: the entries of the
checkpoints it took out are erased, and the removal entry keeps, for each,
only its id and the span of time it was live (``purged``). Replaying the
entries recorded at or before ``when`` gives the checkpoints live then that
are still stored; the purged spans give those live then that are erased.
The answer is the one the config names, or the newest (highest id) of all
of them: a stored one is returned, an erased one raises
:class:`~nenjim.infrastructure.langgraph.errors.CheckpointPurgedError`, and
``None`` means no checkpoint was live then. Its pending writes are read
from the history of its tasks' records: of each task, the last revision
recorded at or before ``when`` (a task adds writes, and errors and
interrupts may be replaced). A checkpoint's writes leave LangGraph's view
only with the checkpoint, so a checkpoint live at ``when`` still had its
writes then.
"""

from __future__ import annotations

from datetime import datetime

from nenjim.infrastructure.langgraph.checkpoint_log import CheckpointLog, LoadedCheckpoint
from nenjim.infrastructure.langgraph.errors import CheckpointPurgedError
from nenjim.infrastructure.langgraph.stored import (
    CheckpointEntry,
    Purged,
    RemovalEntry,
    TaskWrites,
    ThreadAddress,
    sorted_writes,
)


def as_of(
    log: CheckpointLog, address: ThreadAddress, checkpoint_id: str | None, when: datetime
) -> LoadedCheckpoint | None:
    """The checkpoint live at ``when`` (``checkpoint_id``, or the newest), with its writes then.

    ``CheckpointPurgedError`` if that checkpoint was purged since; ``None`` if there was none.
    """
    if not isinstance(when, datetime):
        raise TypeError(f"when must be a datetime, got {type(when).__name__}")
    if when.utcoffset() is None:
        raise ValueError(f"when must carry a time zone (got the naive {when.isoformat()})")
    live: dict[str, CheckpointEntry] = {}
    erased: dict[str, Purged] = {}
    removed_writes: dict[str, set[str]] = {}
    for entry in log.thread_entries(address):
        if isinstance(entry, RemovalEntry):
            for checkpoint, write_ids in entry.writes.items():
                removed_writes.setdefault(checkpoint, set()).update(write_ids)
            for span in entry.purged:
                if span.live_at(when):
                    erased[span.checkpoint_id] = span
        if entry.recorded_at > when:
            continue
        if isinstance(entry, CheckpointEntry):
            live[entry.checkpoint_id] = entry
        else:
            for removed in entry.checkpoints:
                live.pop(removed, None)
    if checkpoint_id is None:
        candidates = set(live) | set(erased)
        wanted = max(candidates) if candidates else None
    else:
        wanted = checkpoint_id
    if wanted is None:
        return None
    chosen = live.get(wanted)
    if chosen is None:
        purged = erased.get(wanted)
        if purged is None:
            return None
        raise CheckpointPurgedError(
            f"checkpoint {wanted} of thread {address.thread_id!r} (namespace "
            f"{address.checkpoint_ns!r}) was live at {when.isoformat()} but was purged at "
            f"{purged.removed_at.isoformat()}",
            thread_id=address.thread_id,
            checkpoint_ns=address.checkpoint_ns,
            checkpoint_id=wanted,
            removed_at=purged.removed_at,
        )
    tasks = {w.task_id for w in log.writes(address, chosen.checkpoint_id)}
    tasks.update(removed_writes.get(chosen.checkpoint_id, ()))
    then: dict[str, TaskWrites] = {}
    for revision in log.task_revisions(address, chosen.checkpoint_id, sorted(tasks)):
        if revision.recorded_at <= when:
            then[revision.task_id] = revision
    writes = sorted_writes(then.values())
    return LoadedCheckpoint(address, chosen, writes)
