"""The PostgreSQL Journal log's pipelined appends.

A writer that committed the log's last append knows the ids its next batch
gets, so it sends the batch, its leaves and tiles and the commit in one round
trip; the append function refuses that batch unless the log still ends where
the writer left it, and the batch is then written again the long way.
"""

from __future__ import annotations

from typing import Any, cast

import psycopg
import pytest
from eventsourcing.persistence import OperationalError
from killed_ingests import assert_nothing_lost_nor_half_kept, ingest_until_killed
from refusals import refusals_in_every_position

from journal_texts import journal_text
from nenjim.cli import main
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.infrastructure.log import ClaimConflictError, LogReader
from nenjim.infrastructure.postgresql.log import ClaimingPostgresApplicationRecorder
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog
from nenjim.journal.impl.ref.transparency import RevisionEvent, revision_leaf

HEAD = "20260101T000000Z"


def _genesis(name: str) -> JournalChain:
    return JournalChain.start(parse_journal(journal_text(name, HEAD)))


def _recorder(log: JournalLog) -> ClaimingPostgresApplicationRecorder:
    return cast(ClaimingPostgresApplicationRecorder, log.recorder)


def _leaves_match_events(log: JournalLog) -> None:
    """Entry n is the leaf of the n-th revision event, and names that event's id."""
    reader = LogReader(log)
    revisions = [
        (n.id, reader.event(n))
        for n in reader.notifications(0)
        if isinstance(reader.event(n), RevisionEvent)
    ]
    tiled = log.tiled_log
    entries = tiled.read_entries(0, tiled.entry_count())
    expected = [(id_, revision_leaf(cast(RevisionEvent, event))) for id_, event in revisions]
    assert entries == expected


def _call_append(log: JournalLog, chain: JournalChain, after: int | None) -> list[int]:
    """Append ``chain``'s events straight through the log's SQL function (no entries)."""
    recorder = _recorder(log)
    events = chain.collect_events()
    stored = [log.mapper.to_stored_event(event) for event in events]
    revision = next(e for e in events if isinstance(e, RevisionEvent))
    function = f'"{recorder.datastore.schema}"."{recorder.append_function_name}"'
    with recorder.datastore.get_connection() as conn:
        rows = conn.execute(
            f"SELECT notification_id FROM {function}(%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                [s.originator_id for s in stored],
                [s.originator_version for s in stored],
                [s.topic for s in stored],
                [s.state for s in stored],
                [DIGEST_NAMESPACE],
                [str(revision.digest)],
                [str(revision.coordinate)],
                after,
            ),
        ).fetchall()
    return [int(row["notification_id"]) for row in rows]


def test_the_append_function_refuses_an_append_after_an_id_the_log_does_not_end_at(
    postgres_schema_url: str,
) -> None:
    log = JournalLog(postgres_schema_url)
    try:
        log.append_chains([_genesis("org.example.a"), _genesis("org.example.b")])
        with pytest.raises(OperationalError, match="ends at id 2, not at 1") as refused:
            _call_append(log, _genesis("org.example.c"), after=1)
        assert isinstance(refused.value.__cause__, psycopg.errors.SerializationFailure)
        assert [n.id for n in LogReader(log).notifications(0)] == [1, 2]  # nothing written
        assert log.digest_owner(parse_journal(journal_text("org.example.c", HEAD)).digest) is None
        assert _call_append(log, _genesis("org.example.c"), after=2) == [3]
    finally:
        log.close()


def test_an_append_after_the_writers_own_reads_nothing_before_it_commits(
    postgres_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = JournalLog(postgres_schema_url)
    try:
        log.append_chains([_genesis("org.example.first")])
        tiles = _recorder(log).tiles
        assert tiles is not None

        def no_edge_read(conn: Any) -> Any:
            raise AssertionError("the edge was read: the append took the long way")

        monkeypatch.setattr(tiles, "edge", no_edge_read)
        ids = log.append_chains([_genesis(f"org.example.n{i}") for i in range(3)])
        assert ids == [2, 3, 4]
        _leaves_match_events(log)
    finally:
        log.close()


def test_an_event_another_writer_appended_without_a_leaf_is_caught_up_first(
    postgres_schema_url: str,
) -> None:
    """The writer's known end is stale: its one-round-trip batch is refused by the log,
    and the long way gives the other writer's revision its leaf before the writer's own."""
    log = JournalLog(postgres_schema_url)
    try:
        log.append_chains([_genesis("org.example.ours")])
        assert _call_append(log, _genesis("org.example.foreign"), after=None) == [2]
        assert log.append_chains([_genesis("org.example.next")]) == [3]
        _leaves_match_events(log)
        assert log.append_chains([_genesis("org.example.last")]) == [4]  # one round trip again
        _leaves_match_events(log)
    finally:
        log.close()
    assert main(["journal", "audit", "--store", postgres_schema_url]) == 0


_DIE_WITH_A_BATCH_IN_FLIGHT = """
import os, signal
from nenjim.infrastructure.postgresql.log import ClaimingPostgresApplicationRecorder
from nenjim.infrastructure.postgresql.tiles import PostgresTiles

write_batch = ClaimingPostgresApplicationRecorder._write_batch
extend_at = PostgresTiles.extend_at
seen = {"batches": 0, "size": 0}

def counting_batch(self, requests):
    seen["batches"] += 1  # the leader alone runs this: no lock needed
    seen["size"] = len(requests)
    return write_batch(self, requests)

def dying_extend_at(self, conn, end, new, last_id):
    # The batch's appends are sent, its commit not yet: die with them in flight.
    if seen["batches"] >= 20 and seen["size"] >= 2:
        conn.pgconn.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return extend_at(self, conn, end, new, last_id)

ClaimingPostgresApplicationRecorder._write_batch = counting_batch
PostgresTiles.extend_at = dying_extend_at
"""


def test_a_kill_with_a_pipelined_batch_in_flight_loses_no_acknowledged_revision(
    postgres_schema_url: str,
) -> None:
    acknowledged = ingest_until_killed(postgres_schema_url, _DIE_WITH_A_BATCH_IN_FLIGHT)
    log = JournalLog(postgres_schema_url, create=False)
    try:
        _leaves_match_events(log)
    finally:
        log.close()
    assert_nothing_lost_nor_half_kept(postgres_schema_url, acknowledged)


def _claimed_elsewhere(url: str, log: JournalLog, name: str) -> None:
    """Another writer claims the digest of ``name``'s genesis behind this writer's back
    (the log's end stays where this writer left it, so its next append of that genesis
    takes the one round trip and is refused there)."""
    digest = parse_journal(journal_text(name, HEAD)).digest
    schema = _recorder(log).datastore.schema
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as other:
        other.execute(
            f'INSERT INTO "{schema}".journal_claims VALUES (%s, %s, %s)',
            (DIGEST_NAMESPACE, str(digest), "org.example.elsewhere"),
        )


def test_refused_appends_never_leave_a_statement_the_server_does_not_hold(
    postgres_schema_url: str,
) -> None:
    """On one connection, refusals in every position among accepted appends: an accepted
    append after any of them commits (the driver's memory of prepared statements must
    not name one that a refused round trip never made)."""
    url = postgres_schema_url.replace("max_overflow=7", "max_overflow=0")
    log = JournalLog(url)
    n = 0

    def accepted() -> None:
        nonlocal n
        n += 1
        log.append_chains([_genesis(f"org.example.n{n}")])

    def refused() -> None:
        nonlocal n
        n += 1
        _claimed_elsewhere(url, log, f"org.example.n{n}")
        with pytest.raises(ClaimConflictError):
            log.append_chains([_genesis(f"org.example.n{n}")])

    try:
        accepted()
        refusals_in_every_position(accepted, refused)
        _leaves_match_events(log)
    finally:
        log.close()
