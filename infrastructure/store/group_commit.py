"""Group commit: operations that arrive together share one transaction and one commit.

A caller submits one item (an append to a log, an operation on a store) with
the function that runs a batch of them, and blocks. If no batch is running,
it becomes the leader: it takes every item queued so far, in arrival order
(its own among them), and hands them to that function, which runs them in
one transaction and commits once (one fsync for all). Items submitted while
a batch runs queue up. Before the batch commits, its runner may take them in
(:meth:`GroupCommit.absorb`, up to a limit) and run them in the same
transaction; those still queued when it ends are led by one
of their callers in the next batch. Nobody waits on a timer: a caller that
finds nothing running leads at once, so a single writer pays nothing for the
grouping (a runner given one item runs it as if ungrouped, in a transaction
of its own without a savepoint).

Every caller is answered only after its batch's runner returned, i.e. after
the batch's commit (or its failure): an acknowledged item is durable. The
runner isolates each item (a savepoint), so one that is rejected fails alone
with its own error and the others still commit, in order. A writer with a
transaction of its own holds the lead for its whole transaction
(:meth:`GroupCommit.exclusive`): the others queue up until it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

R = TypeVar("R")

BATCH_LIMIT = 64
"""The most items one commit takes in."""


class Pending(Generic[R]):
    """One submitted item and, once its batch ended, its outcome."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.result: R | None = None
        self.error: BaseException | None = None
        self.done = False

    def fail(self, error: BaseException) -> None:
        """Record ``error`` as this item's outcome."""
        self.error = error
        self.result = None

    def outcome(self) -> R | None:
        """The item's result, or its own error raised."""
        if self.error is not None:
            error, self.error = self.error, None  # no reference cycle through the traceback
            raise error
        return self.result


Item = TypeVar("Item", bound=Pending[Any])

BatchRunner = Callable[[list[Item]], None]
"""Run the items of a batch in one transaction and commit once, giving each item a
``result`` or (rejected alone) an ``error``; it may add to the batch, through
:meth:`GroupCommit.absorb`, what queued meanwhile. What it raises is every unanswered
item's error: nothing of the batch committed."""


class GroupCommit(Generic[Item]):
    """The queue of items waiting for a commit, and whether a leader is running a batch."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._queue: list[Item] = []
        self._leading = False

    @property
    def waiting(self) -> int:
        """How many submitted items wait for the running batch to end."""
        with self._changed:
            return len(self._queue)

    def submit(self, item: Item, run: BatchRunner[Item]) -> Item:
        """Commit ``item`` in the next batch, led by ``run`` if this caller leads it;
        the item once its batch ended (see :meth:`Pending.outcome`)."""
        with self._changed:
            self._queue.append(item)
            while self._leading and not item.done:
                self._changed.wait()
            if item.done:  # another caller led the batch that held it
                return item
            self._leading = True
            batch, self._queue = self._queue, []
        try:
            run(batch)
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
        return item

    def absorb(self, batch: list[Item], limit: int = BATCH_LIMIT) -> list[Item]:
        """Move the first of the queue into the running ``batch``, in arrival order, until
        it holds ``limit``; those moved, which its runner runs before it commits.

        Callers answered by the previous commit come back while this batch runs, and
        would otherwise wait for it and form the next batch, so that writers settle
        into two halves that commit in turn."""
        if not self._queue:  # read unlocked: one that queues just after leads the next
            return []
        with self._changed:
            moved = self._queue[: max(limit - len(batch), 0)]
            del self._queue[: len(moved)]
        batch.extend(moved)
        return moved

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Lead for the block (a caller's own transaction); items that arrive meanwhile
        wait, then go on in the next batch."""
        self.lead()
        try:
            yield
        finally:
            self.step_down()

    def lead(self) -> None:
        """Wait until no batch runs, then lead: :meth:`exclusive` without a generator, for a
        caller that ends it itself (:meth:`step_down`, in a ``finally``) on every call."""
        with self._changed:
            while self._leading:
                self._changed.wait()
            self._leading = True

    def step_down(self) -> None:
        """End the lead :meth:`lead` took: queued items go on in the next batch."""
        with self._changed:
            self._leading = False
            self._changed.notify_all()
