"""A thread as it stood at a past time, replayed from its stream.

The stream of ``(thread_id, checkpoint_ns)`` holds every checkpoint ever
appended and every removal (delete, run delete, prune), each with the time
its writer recorded it. Replaying the entries recorded at or before ``when``
gives the checkpoints live then; the answer is the one the config names, or
the newest (highest id) of them. Its pending writes are read from their
records' history: every revision recorded at or before ``when``, the last
one of each write (errors and interrupts may be replaced). A checkpoint's
writes leave LangGraph's view only with the checkpoint, so a checkpoint live
at ``when`` had all of its writes recorded by then.
"""

from __future__ import annotations

from datetime import datetime

from infrastructure.langgraph.checkpoint_log import CheckpointLog, LoadedCheckpoint
from infrastructure.langgraph.stored import CheckpointEntry, RemovalEntry, ThreadAddress


def as_of(
    log: CheckpointLog, address: ThreadAddress, checkpoint_id: str | None, when: datetime
) -> LoadedCheckpoint | None:
    """The checkpoint live at ``when`` (``checkpoint_id``, or the newest), with its writes then."""
    if not isinstance(when, datetime):
        raise TypeError(f"when must be a datetime, got {type(when).__name__}")
    if when.utcoffset() is None:
        raise ValueError(f"when must carry a time zone (got the naive {when.isoformat()})")
    live: dict[str, CheckpointEntry] = {}
    removed_writes: dict[str, set[tuple[str, int]]] = {}
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
    ids = {(w.task_id, w.idx) for w in log.writes(address, chosen.checkpoint_id)}
    ids.update(removed_writes.get(chosen.checkpoint_id, ()))
    then = {}
    for revision in log.write_revisions(address, chosen.checkpoint_id, sorted(ids)):
        if revision.recorded_at <= when:
            then[(revision.task_id, revision.idx)] = revision
    writes = tuple(sorted(then.values(), key=lambda w: w.sort_key))
    return LoadedCheckpoint(address, chosen, writes)
