"""Group commit of Journal ingests: concurrent writers share commits, a rejected one fails alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eventsourcing.persistence import IntegrityError, StoredEvent
from killed_ingests import assert_nothing_lost_nor_half_kept, ingest_until_killed
from threads import run_together
from worldviews import contents

from journal_texts import Chain, Rel, content, journal_text
from nenjim.cli import main
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.errors import JournalChainError
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import Claim, ClaimConflictError, LogReader
from nenjim.infrastructure.log.commits import AppendRequest
from nenjim.infrastructure.store.group_commit import GroupCommit
from nenjim.journal.impl.ref.chain_log import catch_up
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog
from nenjim.projections.journal_chains import JournalChainsProjection

HEAD = "20260101T000000Z"


def _ids(url: str) -> list[int]:
    log = JournalLog(url, create=False)
    try:
        return [n.id for n in LogReader(log).notifications(0)]
    finally:
        log.close()


def test_racing_writers_share_commits_and_a_rejected_one_fails_alone(
    durable_store_url: str,
) -> None:
    """Eight writers, each on its own log and ingestion, race: two successors of one head
    (one wins, the other is a fork) and a text whose digest another artifact owns."""
    writers = [
        JournalIngestion(JournalLog(durable_store_url), JournalChainsProjection()) for _ in range(8)
    ]
    shared = Chain("com.example.shared")
    genesis = parse_journal(shared.add(HEAD, (Rel("1.0.0", content(1)),)))
    writers[0].ingest(genesis)
    for writer in writers:
        writer.catch_up()
    rivals = [
        journal_text(
            "com.example.shared",
            f"2026020{i + 1}T000000Z",
            predecessor=str(genesis.digest),
            releases=(Rel("1.0.0", content(1)),),
        )
        for i in range(2)
    ]
    own = [Chain(f"com.example.own{i}") for i in range(8)]
    for i, chain in enumerate(own):
        for month in range(1, 4):
            chain.add(
                f"2026{month:02d}01T000000Z",
                tuple(Rel(f"1.{j}.0", content(10 * i + j)) for j in range(month)),
            )

    def write(i: int) -> list[str]:
        outcomes = []
        texts = [*own[i].texts]
        if i < 2:
            texts.insert(1, rivals[i])
        for text in texts:
            try:
                writers[i].ingest_text(text)
                outcomes.append("accepted")
            except JournalChainError as error:
                outcomes.append(error.reason.name)
        return outcomes

    try:
        outcomes = run_together(write, 8)
        # Each writer's view, part of it taken from views the others shared, is the log's.
        fresh, log = JournalChainsProjection(), JournalLog(durable_store_url)
        catch_up(fresh, LogReader(log))
        log.close()
        for writer in writers:
            assert contents(writer.follow()) == contents(fresh.view)
    finally:
        for writer in writers:
            writer.close()
    rival_outcomes = sorted(outcomes[i][1] for i in range(2))
    assert rival_outcomes == ["FORK", "accepted"]
    others = [
        o
        for i, row in enumerate(outcomes)
        for j, o in enumerate(row)
        if (i, j) not in ((0, 1), (1, 1))
    ]
    assert others == ["accepted"] * 24
    ids = _ids(durable_store_url)
    assert ids == list(range(1, 1 + 1 + 1 + 8 * 3))  # genesis, one rival, 24 own: gap-free
    assert main(["journal", "audit", "--store", durable_store_url]) == 0


class _HeldFirstBatch:
    """Wraps a recorder's batch writer: the first batch waits (up to 10 s) until
    ``wanted`` more appends are queued behind it, or for ``hold`` seconds."""

    def __init__(self, recorder: Any, wanted: int = 0, hold: float = 0.0) -> None:
        self._write = recorder._write_batch
        self._group: GroupCommit[AppendRequest] = recorder._commits.group
        self._wanted, self._hold = wanted, hold
        self.sizes: list[int] = []
        self.committed: list[int] = []  # a batch's size once written, with what it took in
        self.entered = threading.Event()

    def __call__(self, batch: list[AppendRequest]) -> None:
        self.sizes.append(len(batch))
        if len(self.sizes) == 1:
            self.entered.set()
            deadline = time.monotonic() + (self._hold or 10)
            while time.monotonic() < deadline and (
                self._hold or len(self._group._queue) < self._wanted
            ):
                time.sleep(0.005)
        self._write(batch)
        self.committed.append(len(batch))


def test_threads_sharing_one_ingestion_share_commits(durable_store_url: str) -> None:
    """While one ingestion's append waits for its commit, ingestions of other artifacts
    by other threads decide and queue theirs: one commit takes them together. On SQLite
    it is the first append's own (its writer takes in, before committing, what queued
    while it wrote); on PostgreSQL, the next."""
    ingestion = JournalIngestion(JournalLog(durable_store_url), JournalChainsProjection())
    recorder = ingestion._log.recorder
    held = _HeldFirstBatch(recorder, wanted=3)
    recorder._write_batch = held
    texts = [Chain(f"com.example.c{i}").add(HEAD) for i in range(4)]
    try:
        first = threading.Thread(target=ingestion.ingest_text, args=(texts[0],))
        first.start()
        assert held.entered.wait(30)
        outcomes = run_together(lambda i: ingestion.ingest_text(texts[i + 1])[1], 3)
        first.join(30)
        assert outcomes == [True, True, True]
        if durable_store_url.startswith("sqlite"):
            assert held.committed == [4]  # the first commit took the three others in
        else:
            assert held.committed == [1, 3]  # the three others shared the next commit
        assert sorted(str(c) for c in ingestion.view.chains) == [
            f"com.example.c{i}" for i in range(4)
        ]
    finally:
        ingestion.close()
    assert _ids(durable_store_url) == [1, 2, 3, 4]
    assert main(["journal", "audit", "--store", durable_store_url]) == 0


def test_a_successor_waits_for_its_predecessors_append_by_another_thread(
    durable_store_url: str,
) -> None:
    """The successor's decision needs its predecessor in the view: an ingestion of an
    artifact whose append is in flight waits until that append is published."""
    ingestion = JournalIngestion(JournalLog(durable_store_url), JournalChainsProjection())
    chain = Chain("com.example.widget")
    texts = [chain.add(f"2026{month:02d}01T000000Z") for month in (1, 2, 3)]
    ingestion.ingest_text(texts[0])
    recorder = ingestion._log.recorder
    held = _HeldFirstBatch(recorder, hold=0.5)
    recorder._write_batch = held
    try:
        second = threading.Thread(target=ingestion.ingest_text, args=(texts[1],))
        second.start()
        assert held.entered.wait(30)
        _, is_new = ingestion.ingest_text(texts[2])  # decided while the second is in flight
        second.join(30)
        assert is_new
        revisions = ingestion.view.chain(parse_journal(texts[0]).coordinate)
        assert revisions is not None
        assert [str(r.version) for r in revisions.revisions] == [
            f"2026{month:02d}01T000000Z" for month in (1, 2, 3)
        ]
    finally:
        ingestion.close()


class _Held:
    """A batch writer that holds the group's leadership until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, batch: list[AppendRequest]) -> None:
        self.entered.set()
        assert self.release.wait(30)
        for request in batch:
            request.result = []


def test_one_batch_commits_in_order_and_rejects_only_the_conflicting_appends(
    durable_store_url: str,
) -> None:
    """Four appends queued behind a leader are written as one batch by the real recorder:
    a stream version already taken and a digest claimed by another artifact fail alone."""
    log = JournalLog(durable_store_url)
    try:
        taken = parse_journal(Chain("com.example.taken").add(HEAD))
        log.append_chains([JournalChain.start(taken)])
        group: GroupCommit[AppendRequest] = GroupCommit()
        held = _Held()
        leader = threading.Thread(target=group.submit, args=(AppendRequest([], {}), held))
        leader.start()
        assert held.entered.wait(30)

        def request(chain: JournalChain) -> tuple[Sequence[StoredEvent], dict[str, Any]]:
            recorder_kwargs: dict[str, Any] = {}
            original = log.recorder.insert_events

            def capture(events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
                recorder_kwargs.update(kwargs, events=events)
                raise _CapturedError

            log.recorder.insert_events = capture  # type: ignore[method-assign]
            try:
                log.append_chains([chain])
            except _CapturedError:
                pass
            finally:
                log.recorder.insert_events = original  # type: ignore[method-assign]
            events = recorder_kwargs.pop("events")
            return events, recorder_kwargs

        texts = [
            Chain("com.example.one").add(HEAD),
            Chain("com.example.taken").add(HEAD),  # version 1 of a stream that has it
            Chain("com.example.thief").add(HEAD),
            Chain("com.example.two").add(HEAD),
        ]
        requests = [request(JournalChain.start(parse_journal(text))) for text in texts]
        # The thief claims the digest of "one", which the batch's first item claims.
        one_digest = str(parse_journal(texts[0]).digest)
        requests[2][1]["claims"] = [Claim(DIGEST_NAMESPACE, one_digest, "com.example.thief")]
        write = log.recorder._write_batch  # type: ignore[attr-defined]
        results: list[Any] = [None] * 4

        def follow(i: int) -> None:
            try:
                results[i] = group.submit(AppendRequest(*requests[i]), write).outcome()
            except Exception as error:
                results[i] = error

        followers = [threading.Thread(target=follow, args=(i,)) for i in range(4)]
        for thread in followers:
            thread.start()
        deadline = time.monotonic() + 30
        while len(group._queue) < 4 and time.monotonic() < deadline:
            time.sleep(0.001)
        held.release.set()
        for thread in [leader, *followers]:
            thread.join(30)
        assert list(results[0]) == [2]
        assert isinstance(results[1], IntegrityError)
        assert isinstance(results[2], ClaimConflictError)
        assert list(results[3]) == [3]  # the id after the last written: gap-free
        assert [n.id for n in LogReader(log).notifications(0)] == [1, 2, 3]
        assert log.digest_owner(parse_journal(texts[0]).digest) is not None
    finally:
        log.close()
    assert main(["journal", "audit", "--store", durable_store_url]) == 0


class _CapturedError(Exception):
    """Stops an append at the recorder, with its arguments captured."""


_DIE_MID_BATCH = """
import os, signal
from nenjim.infrastructure.sqlite.log import ClaimingSQLiteApplicationRecorder

insert, inserted, batch = ClaimingSQLiteApplicationRecorder._insert_events, [], []
write_batch = ClaimingSQLiteApplicationRecorder._write_batch

def counting_batch(self, requests):
    batch[:] = [len(requests), 0]
    return write_batch(self, requests)

def dying_insert(self, c, events, **kwargs):
    ids = insert(self, c, events, **kwargs)
    inserted.append(1)  # the leader alone runs this: no lock needed
    batch[1] += 1
    if len(inserted) >= 40 and batch[1] == 2:  # a batch's second append written
        os.kill(os.getpid(), signal.SIGKILL)
    return ids

ClaimingSQLiteApplicationRecorder._write_batch = counting_batch
ClaimingSQLiteApplicationRecorder._insert_events = dying_insert
"""


def test_a_kill_in_the_middle_of_a_batch_loses_no_acknowledged_revision(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    acknowledged = ingest_until_killed(url, _DIE_MID_BATCH)
    assert_nothing_lost_nor_half_kept(url, acknowledged)
