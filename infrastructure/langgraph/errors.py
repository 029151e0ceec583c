"""The saver's errors: storage conflicts and purged history, naming the thread and checkpoint."""

from __future__ import annotations

from datetime import datetime

from nenjim.infrastructure.storage import ConflictError, NotFoundError


class CheckpointConflictError(ConflictError):
    """A checkpoint or write the thread's log refuses: another writer got there first.

        Raised when a step lost a race: its parent is not the thread's newest
        checkpoint, and its id is below the newest's or the newest is another
        step from the same parent (two runs advanced one thread at once), when
        a checkpoint id is stored again with other content or after it was
        deleted (or purged), when a pending write names a deleted checkpoint, and when a
        copy targets a thread that already has checkpoints, and when a write lost
    to other writers on its thread as often as the saver retries (its
    ``__cause__`` is the storage ``ConflictError``). Nothing was written.
    """


class CheckpointPurgedError(NotFoundError):
    """``as_of``: the checkpoint live at the time asked was purged since.

    A delete, a run delete or a prune erases what it removes from the log, so
    the checkpoint that ``get_tuple`` would have returned then cannot be read
    any more. ``as_of`` returns ``None`` only when no checkpoint was live then
    (never written, or not yet); this error says one was, and when it left:
    ``checkpoint_id`` (the purged checkpoint), ``removed_at`` (when it left
    LangGraph's view) and ``thread_id``/``checkpoint_ns``.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        removed_at: datetime,
    ) -> None:
        super().__init__(message, resource="langgraph.threads", key=checkpoint_id)
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.checkpoint_id = checkpoint_id
        self.removed_at = removed_at
