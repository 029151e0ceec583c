"""The saver's errors: storage conflicts that name the thread and checkpoint involved."""

from __future__ import annotations

from nenjim.infrastructure.storage import ConflictError


class CheckpointConflictError(ConflictError):
    """A checkpoint or write the thread's log refuses: another writer got there first.

    Raised when a step's checkpoint names a parent that is no longer the
    thread's newest checkpoint (two runs advanced one thread at once), when
    a checkpoint id is stored again with other content or after it was
    deleted, when a pending write names a deleted checkpoint, and when a
    copy targets a thread that already has checkpoints. Nothing was written.
    """
