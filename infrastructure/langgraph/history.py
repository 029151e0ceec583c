"""A thread as it stood at a past time, replayed from its stream.

The stream of ``(thread_id, checkpoint_ns)`` holds every checkpoint ever
appended and every removal (delete, run delete, prune), each with the time
its writer recorded it. Replaying the entries recorded at or before ``when``
gives the checkpoints live then; the answer is the one the config names, or
the newest (highest id) of them. Its pending writes are read from the
history of its tasks' records: of each task, the last revision recorded at
or before ``when`` (a task adds writes, and errors and interrupts may be
replaced). A checkpoint's writes leave LangGraph's view only with the
checkpoint, so a checkpoint live at ``when`` still had its writes then.
"""

from __future__ import annotations

from datetime import datetime

from nenjim.infrastructure.langgraph.checkpoint_log import CheckpointLog, LoadedCheckpoint
from nenjim.infrastructure.langgraph.stored import (
    CheckpointEntry,
    RemovalEntry,
    TaskWrites,
    ThreadAddress,
    sorted_writes,
)


def as_of(
    log: CheckpointLog, address: ThreadAddress, checkpoint_id: str | None, when: datetime
) -> LoadedCheckpoint | None:
    """The checkpoint live at ``when`` (``checkpoint_id``, or the newest), with its writes then."""
    if not isinstance(when, datetime):
        raise TypeError(f"when must be a datetime, got {type(when).__name__}")
    if when.utcoffset() is None:
        raise ValueError(f"when must carry a time zone (got the naive {when.isoformat()})")
    live: dict[str, CheckpointEntry] = {}
    removed_writes: dict[str, set[str]] = {}
    for entry in log.thread_entries(address):
        if isinstance(entry, RemovalEntry):
            for checkpoint, write_ids in entry.writes.items():
                removed_writes.setdefault(checkpoint, set()).update(write_ids)
        if entry.recorded_at > when:
            continue
        if isinstance(entry, CheckpointEntry):
            live[entry.checkpoint_id] = entry
        else:
            for removed in entry.checkpoints:
                live.pop(removed, None)
    if checkpoint_id is None:
        chosen = live[max(live)] if live else None
    else:
        chosen = live.get(checkpoint_id)
    if chosen is None:
        return None
    tasks = {w.task_id for w in log.writes(address, chosen.checkpoint_id)}
    tasks.update(removed_writes.get(chosen.checkpoint_id, ()))
    then: dict[str, TaskWrites] = {}
    for revision in log.task_revisions(address, chosen.checkpoint_id, sorted(tasks)):
        if revision.recorded_at <= when:
            then[revision.task_id] = revision
    writes = sorted_writes(then.values())
    return LoadedCheckpoint(address, chosen, writes)
