"""Group commit: one-operation transactions that arrive together share one commit.

A caller submits one operation and blocks. If no batch is running, it becomes
the leader: it takes every operation queued so far (its own first, then in
arrival order) and hands them to the backend's ``run_batch``, which runs them
in one transaction and commits once (one fsync for all). Operations submitted
while a batch runs queue up. Before the batch commits, its runner takes them
in (:meth:`GroupCommit.absorb`, up to a limit) and runs them in the same
transaction; those still queued when it ends are led by one of their callers
in the next batch. Nobody waits on a timer: a caller that finds no batch
running and nobody queued runs its operation at once through the backend's
``run_one`` (its own transaction, no queue entry, no savepoint), so a single
writer pays nothing for the grouping; callers arriving meanwhile queue behind
it and are taken into its commit as into a batch's.

Every caller is answered only after ``run_batch`` returned, i.e. after the
batch's commit (or its failure): an acknowledged operation is durable.
``run_batch`` isolates each operation (on SQLite a savepoint, taken once
an operation of the batch raised), so one that raises fails alone and the
others still commit, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from nenjim.infrastructure.store.log_group_commit import take_in


class Pending:
    """One submitted operation and, once its batch ended, its outcome."""

    __slots__ = ("done", "error", "operation", "result")

    def __init__(self, operation: Callable[[Any], Any]) -> None:
        self.operation = operation
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False

    def fail(self, error: BaseException) -> None:
        """Record ``error`` as this operation's outcome."""
        self.error = error
        self.result = None


OneRunner = Callable[[Callable[[Any], Any], list["Pending"]], Any]
"""Run one operation in a transaction of its own and commit; its value (or its error).

Before it commits it may take in, through :meth:`GroupCommit.absorb` into the list it is
given, what queued meanwhile: it must then give each of those a ``result`` or an
``error``, as a :data:`BatchRunner` does."""

BatchRunner = Callable[[list[Pending]], None]
"""Run the operations of a batch in one transaction and set each one's outcome (it may
add to the batch, through :meth:`GroupCommit.absorb`, what queued meanwhile).

It must give every item a ``result`` or an ``error`` and may raise only what
is not the items' (it is then every unanswered item's error)."""


class GroupCommit:
    """Leader-based batching of one-operation transactions."""

    def __init__(self, run_batch: BatchRunner, run_one: OneRunner) -> None:
        self._run_batch = run_batch
        self._run_one = run_one
        self._changed = threading.Condition(threading.Lock())
        self._queue: list[Pending] = []
        self._leading = False

    @property
    def waiting(self) -> int:
        """How many submitted operations wait for the running batch to end."""
        with self._changed:
            return len(self._queue)

    def submit(self, operation: Callable[[Any], Any]) -> Any:
        """Run ``operation(context)`` in a shared transaction; its value once committed."""
        with self._changed:
            alone = not self._leading and not self._queue
            if alone:
                self._leading = True
        if alone:
            return self._alone(operation)
        return self._queued(operation)

    def absorb(self, batch: list[Pending], limit: int) -> list[Pending]:
        """Move what queued into the running ``batch`` (see :func:`take_in`); the items
        moved, which its runner runs after the others and before it commits."""
        if not self._queue:  # read unlocked: one that queues just after leads the next
            return []
        with self._changed:
            return take_in(self._queue, batch, limit)

    def _alone(self, operation: Callable[[Any], Any]) -> Any:
        """Lead a batch of just ``operation``, run directly (with what it absorbs); whoever
        is still queued leads next."""
        joined: list[Pending] = []
        try:
            return self._run_one(operation, joined)
        finally:
            with self._changed:
                for pending in joined:
                    pending.done = True
                self._leading = False
                if self._queue or joined:
                    self._changed.notify_all()

    def _queued(self, operation: Callable[[Any], Any]) -> Any:
        """Queue ``operation`` behind the running batch; lead the next one if still queued."""
        item = Pending(operation)
        with self._changed:
            self._queue.append(item)
            while self._leading and not item.done:
                self._changed.wait()
            if not item.done:
                self._leading = True
                batch, self._queue = self._queue, []
        if not item.done:
            self._lead(batch)
        if item.error is not None:
            error, item.error = item.error, None  # no reference cycle through the traceback
            raise error
        return item.result

    def _lead(self, batch: list[Pending]) -> None:
        try:
            self._run_batch(batch)
        except BaseException as error:
            # Nothing of the batch committed: a result is void, an own error stands.
            for pending in batch:
                if pending.error is None:
                    pending.fail(error)
        finally:
            with self._changed:
                for pending in batch:
                    pending.done = True
                self._leading = False
                self._changed.notify_all()
