"""The group commit's leader/follower protocol, with writers that record what they were given."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from nenjim.infrastructure.log.commits import AppendRequest, log_commits
from nenjim.infrastructure.store.group_commit import GroupCommit


class _Writer:
    """Records each batch; the first batch waits until released, so others queue behind it."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[Any]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = fail

    def __call__(self, batch: list[AppendRequest]) -> None:
        self.batches.append([request.stored_events for request in batch])
        if len(self.batches) == 1:
            self.entered.set()
            assert self.release.wait(30)
        if self.fail and len(self.batches) == 2:
            raise OSError("disk full")
        for request in batch:
            request.result = list(request.stored_events)


def _submit(group: GroupCommit[AppendRequest], events: list[Any], writer: Any) -> Any:
    return group.submit(AppendRequest(events, {}), writer).outcome()


def _queue_behind_leader(
    group: GroupCommit[AppendRequest], writer: _Writer, count: int
) -> list[Any]:
    results: list[Any] = [None] * (count + 1)

    def call(i: int) -> None:
        try:
            results[i] = _submit(group, [i], writer)
        except OSError as error:
            results[i] = error

    leader = threading.Thread(target=call, args=(0,))
    leader.start()
    assert writer.entered.wait(30)
    followers = [threading.Thread(target=call, args=(i,)) for i in range(1, count + 1)]
    for thread in followers:
        thread.start()
    deadline = time.monotonic() + 30
    while len(group._queue) < count and time.monotonic() < deadline:
        time.sleep(0.001)
    writer.release.set()
    for thread in [leader, *followers]:
        thread.join(30)
    return results


def test_appends_that_arrive_during_a_commit_share_the_next_one() -> None:
    group: GroupCommit[AppendRequest] = GroupCommit()
    writer = _Writer()
    results = _queue_behind_leader(group, writer, 3)
    assert writer.batches[0] == [[0]]
    assert sorted(writer.batches[1]) == [[1], [2], [3]]  # one batch, one commit
    assert results == [[0], [1], [2], [3]]  # each caller gets its own result


def test_a_failed_batch_fails_every_caller_in_it_and_no_other() -> None:
    group: GroupCommit[AppendRequest] = GroupCommit()
    writer = _Writer(fail=True)
    results = _queue_behind_leader(group, writer, 2)
    assert results[0] == [0]  # committed before the failing batch
    assert all(isinstance(r, OSError) and str(r) == "disk full" for r in results[1:])
    assert _submit(group, [9], writer) == [9]  # the group leads on after a failure


def test_a_rejected_request_raises_its_own_error() -> None:
    def writer(batch: list[AppendRequest]) -> None:
        for request in batch:
            request.result = request.stored_events
        batch[0].error = ValueError("version taken")

    group: GroupCommit[AppendRequest] = GroupCommit()
    with pytest.raises(ValueError, match="version taken"):
        _submit(group, [1], writer)


def test_one_log_has_one_group_while_a_recorder_holds_it() -> None:
    first = log_commits(("test", "log-a"))
    assert log_commits(("test", "log-a")) is first
    assert log_commits(("test", "log-b")) is not first


def test_a_writer_with_its_own_transaction_holds_the_lead_until_it_ends() -> None:
    group: GroupCommit[AppendRequest] = GroupCommit()
    written: list[Any] = []

    def writer(batch: list[AppendRequest]) -> None:
        written.extend(request.stored_events for request in batch)

    with group.exclusive():
        follower = threading.Thread(target=_submit, args=(group, [1], writer))
        follower.start()
        deadline = time.monotonic() + 30
        while group.waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert written == []  # queued behind the transaction
    follower.join(30)
    assert written == [[1]]


def test_a_writer_takes_in_what_queued_while_it_wrote_up_to_its_limit() -> None:
    """Before its commit, the leader's writer moves queued requests into its batch: they
    are answered with that commit; those past the limit lead the next batch."""
    group: GroupCommit[AppendRequest] = GroupCommit()
    commits: list[list[Any]] = []
    entered, release = threading.Event(), threading.Event()

    def writer(batch: list[AppendRequest]) -> None:
        if not commits:
            entered.set()
            assert release.wait(30)
        for request in batch:
            request.result = list(request.stored_events)
        while more := group.absorb(batch, 4):
            for request in more:
                request.result = list(request.stored_events)
        commits.append([request.stored_events for request in batch])

    results: list[Any] = [None] * 7

    def call(i: int) -> None:
        results[i] = _submit(group, [i], writer)

    leader = threading.Thread(target=call, args=(0,))
    leader.start()
    assert entered.wait(30)
    followers = []
    for i in range(1, 7):  # queued in this order
        followers.append(threading.Thread(target=call, args=(i,)))
        followers[-1].start()
        deadline = time.monotonic() + 30
        while len(group._queue) < i and time.monotonic() < deadline:
            time.sleep(0.001)
    release.set()
    for thread in [leader, *followers]:
        thread.join(30)
    assert commits == [[[0], [1], [2], [3]], [[4], [5], [6]]]
    assert results == [[i] for i in range(7)]
