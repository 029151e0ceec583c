"""The Journal log's transparency tree: leaves and tiles written with the revisions.

Each store kind keeps, in the transaction of every append, one leaf per
revision (in notification order) and the tiles of the tree over them. The
stored tiles are compared here with tiles built independently, in memory,
from the leaves of the stored texts.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from eventsourcing.persistence import IntegrityError

from journal_texts import Chain, journal_text
from nenjim.cli import main as nenjim
from nenjim.domain.journal.chain import JournalChain, chain_id
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.transparency import MemoryTree, SignerKey, Tile, read_tile, tiles_for_size
from nenjim.infrastructure.log import Claim, LogApplication, LogReader
from nenjim.infrastructure.log.commits import AppendRequest
from nenjim.journal.impl.ref.audit import audit_journal_log, journal_problem
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE, JournalLog
from nenjim.journal.impl.ref.transparency import RevisionEvent, TreeTiles, revision_leaf
from nenjim.journal.impl.ref.transparency_audit import tree_problem
from nenjim.journal.impl.ref.transparency_proofs import JournalTree

V1, V2 = "20260101T000000Z", "20260201T000000Z"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "journal.db"
REPO = Path(__file__).resolve().parents[2]


def _geneses(first: int, count: int) -> list[JournalChain]:
    return [
        JournalChain.start(parse_journal(journal_text(f"org.example.a{n}", V1)))
        for n in range(first, first + count)
    ]


def _text_leaves(log: LogApplication) -> list[bytes]:
    reader = LogReader(log)
    events = (reader.event(n) for n in reader.notifications(0))
    return [revision_leaf(e) for e in events if isinstance(e, RevisionEvent)]


def _assert_tree_matches_texts(log: JournalLog) -> int:
    """The stored leaves are the texts' leaves; the stored tiles are those of their tree."""
    tiled = log.tiled_log
    leaves = _text_leaves(log)
    stored = tiled.read_entries(0, tiled.entry_count())
    assert [data for _, data in stored] == leaves
    tree = MemoryTree(leaves)
    tiles = tiles_for_size(tree.size)
    expected = {(t.level, t.index): read_tile(t, tree) for t in tiles}
    # Every tile is stored but a partial one of level 0, which is read from the leaves.
    assert {(t.level, t.index): t.data for t in tiled.stored_tiles()} == {
        key: data for key, data in expected.items() if key[0] or len(data) == 256 * 32
    }
    assert TreeTiles(tiled).read_tiles(tiles) == list(expected.values())
    assert tree_problem(log) is None
    return tree.size


@pytest.mark.parametrize("batches", [[1, 255, 1, 300, 3], [256, 256], [513]])
def test_every_append_writes_its_leaves_and_tiles(store_url: str, batches: list[int]) -> None:
    log = JournalLog(store_url)
    first = 0
    for count in batches:
        log.append_chains(_geneses(first, count))
        first += count
        assert _assert_tree_matches_texts(log) == first


def test_successors_are_leaves_in_acceptance_order(store_url: str) -> None:
    log = JournalLog(store_url)
    chain = Chain("org.example.widget")
    head = JournalChain.start(parse_journal(chain.add(V1)))
    log.append_chains([head, *_geneses(0, 2)])
    head.accept(parse_journal(chain.add(V2)), log.digest_owner)
    log.append_chains([head])
    stored = log.tiled_log.read_entries(0, 10)
    assert [data.split()[:2] for _, data in stored] == [
        [b"org.example.widget", V1.encode()],
        [b"org.example.a0", V1.encode()],
        [b"org.example.a1", V1.encode()],
        [b"org.example.widget", V2.encode()],
    ]
    assert [id_ for id_, _ in stored] == [1, 2, 3, 4]
    assert log.tiled_log.entry_position(stored[3][1]) == 3
    assert log.tiled_log.entry_position(b"no such leaf\n") is None


def test_a_refused_append_leaves_the_tree_unchanged(store_url: str) -> None:
    log = JournalLog(store_url)
    chain = Chain("org.example.widget")
    genesis = parse_journal(chain.add(V1))
    log.append_chains([JournalChain.start(genesis), *_geneses(0, 3)])
    before = (log.tiled_log.entry_count(), log.tiled_log.stored_tiles())
    first: JournalChain = log.repository.get(chain_id(genesis.coordinate))
    second: JournalChain = log.repository.get(chain_id(genesis.coordinate))
    first.accept(parse_journal(chain.add(V2)), log.digest_owner)
    other = journal_text("org.example.widget", "20260202T000000Z", predecessor=str(genesis.digest))
    second.accept(parse_journal(other), log.digest_owner)
    log.append_chains([first])
    after_first = (log.tiled_log.entry_count(), log.tiled_log.stored_tiles())
    assert after_first != before
    with pytest.raises(IntegrityError):
        log.append_chains([second, *_geneses(10, 2)])
    assert (log.tiled_log.entry_count(), log.tiled_log.stored_tiles()) == after_first
    assert _assert_tree_matches_texts(log) == 5


def test_writers_that_take_turns_build_one_tree(durable_store_url: str) -> None:
    """Each writer keeps the tree's edge it committed last: it must not use it once the
    other writer has appended, nor after its own append was refused."""
    writers = [JournalLog(durable_store_url), JournalLog(durable_store_url)]
    refused = Chain("org.example.refused")
    genesis = parse_journal(refused.add(V1))
    writers[0].append_chains([JournalChain.start(genesis)])
    first = 1
    for turn, count in enumerate([1, 255, 3, 1, 300, 2, 254, 1]):
        log = writers[turn % 2]
        if turn == 3:  # a refused append: the chain's head moved under this writer
            stale: JournalChain = log.repository.get(chain_id(genesis.coordinate))
            moved: JournalChain = log.repository.get(chain_id(genesis.coordinate))
            moved.accept(parse_journal(refused.add(V2)), log.digest_owner)
            log.append_chains([moved])
            other = journal_text(
                "org.example.refused", "20260202T000000Z", predecessor=str(genesis.digest)
            )
            stale.accept(parse_journal(other), log.digest_owner)
            with pytest.raises(IntegrityError):
                log.append_chains([stale, *_geneses(9000, 2)])
            first += 1
        log.append_chains(_geneses(first, count))
        first += count
        assert _assert_tree_matches_texts(log) == first


def test_the_edge_of_a_batch_that_failed_whole_is_not_kept(durable_store_url: str) -> None:
    """A batch's first append grew the tree's edge, then the batch failed and was rolled
    back: the writer must not take that edge for the tree's once another process's append
    brings the log to the same size."""
    ours = JournalLog(durable_store_url)
    ours.append_chains(_geneses(0, 5))

    def request(chain: JournalChain, leaves: int) -> AppendRequest[Sequence[int] | None]:
        events = chain.collect_events()
        revisions = [e for e in events if isinstance(e, RevisionEvent)]
        claims = [Claim(DIGEST_NAMESPACE, e.digest, e.coordinate) for e in revisions]
        entries = [revision_leaf(revisions[0])] * leaves  # one leaf per event, or a bad count
        stored = [ours.mapper.to_stored_event(e) for e in events]
        return AppendRequest(stored, {"claims": claims, "entries": entries})

    good, bad = _geneses(100, 2)
    with pytest.raises(ValueError, match="2 entries for 1 events"):
        ours.recorder._write_batch([request(good, 1), request(bad, 2)])
    # Another process appends: the log now has the size the failed batch left.
    _append_in_another_process(durable_store_url, journal_text("org.example.a200", V1))
    ours.append_chains(_geneses(300, 200))  # one batch: as a single ingest is written
    ours.append_chains(_geneses(500, 51))  # fills (and stores) the first tile
    assert _assert_tree_matches_texts(ours) == 257


_APPEND_ONE = """
import sys
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.impl.ref.log import JournalLog
log = JournalLog(sys.argv[1])
log.append_chains([JournalChain.start(parse_journal(sys.stdin.read()))])
log.close()
"""


def _append_in_another_process(url: str, text: str) -> None:
    subprocess.run(
        [sys.executable, "-c", _APPEND_ONE, url], input=text, text=True, check=True, cwd=REPO
    )


def test_a_partial_tile_of_level_0_stored_by_an_earlier_version_is_not_read(
    tmp_path: Path,
) -> None:
    url, path = _tampered_store(tmp_path, 260)
    log = JournalLog(url)
    leaves = _text_leaves(log)
    earlier = read_tile(Tile(0, 1, 2), MemoryTree(leaves[:258]))
    with sqlite3.connect(path) as connection:  # as an earlier version left it, 2 leaves ago
        connection.execute("INSERT INTO journal_tiles VALUES (0, 1, ?)", (earlier,))
    assert tree_problem(log) is None
    assert TreeTiles(log.tiled_log).read_tiles([Tile(0, 1, 4)]) == [
        read_tile(Tile(0, 1, 4), MemoryTree(leaves))
    ]
    log.append_chains(_geneses(260, 300))  # the tile fills: stored whole, over the old row
    assert _assert_tree_matches_texts(log) == 560
    log.close()


def test_a_tree_hashes_only_the_leaves_added_since_its_last_checkpoint(store_url: str) -> None:
    log = JournalLog(store_url)
    log.append_chains(_geneses(0, 300))
    tree = JournalTree(log, SignerKey.generate("example.com/journal"))
    tiled = log.tiled_log
    read: list[tuple[int, int]] = []
    original = tiled.read_entries

    def counted(start: int, stop: int) -> list[tuple[int, bytes]]:
        read.append((start, stop))
        return original(start, stop)

    tiled.read_entries = counted  # type: ignore[method-assign]
    assert tree.sign().checkpoint.root_hash == MemoryTree(_text_leaves(log)).root()
    assert read == [(256, 300)]  # the partial tile of level 0, from its entries
    log.append_chains(_geneses(300, 5))
    checkpoint = tree.sign().checkpoint
    assert (checkpoint.size, checkpoint.root_hash) == (305, MemoryTree(_text_leaves(log)).root())
    assert read == [(256, 300), (300, 305)]  # only the leaves added since
    expected = read_tile(Tile(0, 1, 49), MemoryTree(_text_leaves(log)))
    assert tree.served_tile(Tile(0, 1, 49)) == expected
    assert tree.served_tile(Tile(0, 1, 50)) is None  # not in the tree yet
    assert read == [(256, 300), (300, 305)]


class _OlderBuildLog(LogApplication):
    """The Journal log as a build without the tree writes it: events and claims only."""

    name = "journal"


def test_revisions_appended_without_leaves_are_caught_up(durable_store_url: str) -> None:
    log = JournalLog(durable_store_url)
    log.append_chains(_geneses(0, 3))
    older = _OlderBuildLog(durable_store_url)
    chains = _geneses(3, 2)
    older.append(chains, [Claim(DIGEST_NAMESPACE, _digest(c), c.coordinate) for c in chains])
    assert log.tiled_log.entry_count() == 3  # behind: the older build wrote no leaves
    # The next append covers the older build's revisions first, in log order.
    log.append_chains(_geneses(5, 1))
    assert _assert_tree_matches_texts(log) == 6
    older.append(_geneses(6, 300), [])
    reopened = JournalLog(durable_store_url, create=False)  # an open catches up too
    assert reopened.tiled_log.entry_count() == 306
    assert _assert_tree_matches_texts(reopened) == 306


def _digest(chain: JournalChain) -> str:
    event = chain.pending_events[0]
    assert isinstance(event, RevisionEvent)
    return event.digest


def test_a_store_of_an_older_build_gets_its_tree_on_open(tmp_path: Path) -> None:
    shutil.copyfile(FIXTURE, tmp_path / "journal.db")
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    with sqlite3.connect(tmp_path / "journal.db") as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert "journal_tiles" not in tables
    log = JournalLog(url, create=False)
    assert _assert_tree_matches_texts(log) == 51
    log.close()


def _tampered_store(tmp_path: Path, count: int) -> tuple[str, Path]:
    path = tmp_path / "journal.db"
    url = f"sqlite:///{path}"
    log = JournalLog(url)
    log.append_chains(_geneses(0, count))
    log.close()
    return url, path


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (
            "UPDATE journal_tiles SET data = CAST(zeroblob(32) || substr(data, 33) AS BLOB) "
            "WHERE level = 0 AND idx = 0",
            "stored tile tile/0/000 differs from the tree recomputed from the texts",
        ),
        (
            "UPDATE journal_tiles SET data = substr(data, 1, 32 * 3) WHERE level = 0 AND idx = 0",
            "stored tile tile/0/000.p/3 differs from the tree recomputed from the texts",
        ),
        (
            "INSERT INTO journal_tiles VALUES (0, 1, zeroblob(32 * 3))",
            "stored tile tile/0/001.p/3 differs from the tree recomputed from the texts",
        ),
        (
            "INSERT INTO journal_tiles VALUES (0, 1, zeroblob(32 * 5))",
            "stored tile tile/0/001.p/5 differs from the tree recomputed from the texts",
        ),
        (
            "DELETE FROM journal_tiles WHERE level = 1",
            "tile tile/1/000.p/1 of the tree of 260 revisions is not stored",
        ),
        (
            "INSERT INTO journal_tiles VALUES (2, 0, zeroblob(32))",
            "stored tile tile/2/000.p/1 is not a tile of the tree of 260 revisions",
        ),
        (
            "UPDATE journal_entries SET data = CAST('x' AS BLOB) WHERE position = 7",
            "transparency leaf 7 (notification 8) differs from the leaf of its stored text",
        ),
        (
            "UPDATE journal_entries SET notification_id = 99 WHERE position = 7",
            "transparency leaf 7 is stored for notification 99; the revision at that position "
            "is notification 8",
        ),
        # SQLite lets a column hold any type: the same bytes as TEXT read back the same.
        (
            "UPDATE journal_tiles SET data = CAST(data AS TEXT) WHERE level = 1",
            "journal_tiles row (level 1, idx 0) holds data of SQLite type text, not blob",
        ),
        (
            "UPDATE journal_entries SET data = CAST(data AS TEXT) WHERE position = 7",
            "journal_entries row (position 7) holds data of SQLite type text, not blob",
        ),
        (
            "UPDATE journal_entries SET notification_id = 'eight' WHERE position = 7",
            "journal_entries row (position 7) holds notification_id of SQLite type text, "
            "not integer",
        ),
    ],
)
def test_the_audit_names_a_stored_tile_or_leaf_that_disagrees(
    tmp_path: Path, edit: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url, path = _tampered_store(tmp_path, 260)
    assert audit_journal_log(url).ok
    with sqlite3.connect(path) as connection:
        connection.execute(edit)
    report = audit_journal_log(url)
    assert journal_problem(report) is not None
    assert named in journal_problem(report)
    assert nenjim(["journal", "audit", "--store", url]) == 1
    captured = capsys.readouterr()
    assert named in captured.err
    assert captured.err.count("\n") == 1


def test_racing_writers_leave_one_tree_of_the_log(durable_store_url: str) -> None:
    logs = [JournalLog(durable_store_url) for _ in range(4)]

    def write(n: int) -> None:
        for batch in range(10):
            logs[n].append_chains(_geneses(1000 * n + 10 * batch, 1 + batch % 3))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _assert_tree_matches_texts(logs[0]) == 4 * 19  # each writes 1+2+3+1+2+3+1+2+3+1


def test_concurrent_first_opens_of_a_new_store_all_open(durable_store_url: str) -> None:
    opened: list[JournalLog] = []
    failures: list[BaseException] = []
    start = threading.Barrier(6)

    def open_log() -> None:
        start.wait()
        try:
            opened.append(JournalLog(durable_store_url))
        except BaseException as error:  # reported below, with the others
            failures.append(error)

    threads = [threading.Thread(target=open_log) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    opened[0].append_chains(_geneses(0, 3))
    assert all(log.tiled_log.entry_count() == 3 for log in opened)
