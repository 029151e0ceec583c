"""A write that finds the Journal's transparency tree damaged fails as damage, appending nothing.

The tree (leaves in ``journal_entries``, tiles in ``journal_tiles``) derives
from the log; every append extends it, reading the tiles and leaves at its
right edge. When one of those was deleted or edited by hand, the append
cannot extend the tree: it must fail as damage (exit 1, kind ``integrity``,
one line pointing to ``nenjim journal repair --store URL``), not as an internal
error, and the revisions it carried must not be appended. After the repair
the same write goes through. Every write path is tried: a start that ingests
a new file (the CLI's ``journal verify``), a start whose open catches up
leaves missing at the end, ``refresh()`` and ``ingest_text``.

The store holds 260 revisions: a full tile of level 0 (leaves 0-255), the
partial one after it (leaves 256-259, hashed from the leaves, not stored),
and a tile of level 1. The stores are filled by this process, but every
write under test opens the store anew, as another process would: this
process's last append is not what hands the writer the tree's edge.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from journal_texts import journal_text, write_revision
from nenjim.cli import main as nenjim
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.journal.exception import JournalIntegrityError
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.log import JournalLog, root_identity
from nenjim.journal.impl.ref.manager import ingest_text

V1 = "20260101T000000Z"
NEW = "org.example.new"

# Edits of the tree an append must read to extend it; what the failure names.
EDITS = {
    "tile-deleted": (
        "DELETE FROM journal_tiles WHERE level = 1",
        "tile (level 1, index 0) is not stored",
    ),
    "leaf-deleted": (
        "DELETE FROM journal_entries WHERE position = 258",
        "tile tile/0/001.p/4 is hashed from entries 256 to 259; 3 of entries 256 to 259 are stored",
    ),
    "tile-cut": (
        "UPDATE journal_tiles SET data = substring(data from 2) WHERE level = 1",
        "tile tile/1/000.p/1 is stored with 31 bytes, too few for its 1 hashes",
    ),
}


@pytest.fixture
def store(nenjim_durable_store_url: str, tmp_path: Path) -> tuple[str, Path]:
    """A store of 260 revisions owned by an (empty) root.

    Every log is closed and dropped (no ``close_logs``, which keeps them): a log alive in
    this process would keep the tree's edge of its last append for the next writer."""
    url = nenjim_durable_store_url
    root = tmp_path / "root"
    root.mkdir()
    log = JournalLog(url, identity=root_identity(os.path.realpath(root)))
    log.append_chains(
        [
            JournalChain.start(parse_journal(journal_text(f"org.example.a{n}", V1)))
            for n in range(260)
        ]
    )
    log.close()
    return url, root


@contextlib.contextmanager
def _connection(url: str) -> Iterator[Any]:
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite://")
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            yield connection
        return
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as connection:
        connection.execute(f'SET search_path TO "{schema}"')
        yield connection


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:"):  # SQLite's name for it
        statement = statement.replace("substring(data from 2)", "substr(data, 2)")
    with _connection(url) as connection:
        cursor = connection.execute(statement)
        return list(cursor.fetchall()) if cursor.description else []


def _events(url: str) -> int:
    return int(_sql(url, "SELECT count(*) FROM journal_events")[0][0])


def _run(*argv: str) -> tuple[int, str, str]:
    gc.collect()  # no log of this process is left to hand its tree's edge to the command
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = nenjim(list(argv))
    return code, out.getvalue(), err.getvalue()


def _new_file(root: Path) -> None:
    write_revision(root, NEW, V1, journal_text(NEW, V1))


def _assert_damage(err: str, url: str, named: str) -> None:
    assert err.count("\n") == 1, err
    assert err.startswith(
        f"nenjim: error: the transparency tree in {url} is damaged, nothing was appended: "
    ), err
    assert named in err
    assert err.endswith(
        f"(derived from the log: nenjim journal repair --store {url} rebuilds it)\n"
    )


@pytest.mark.parametrize("edit", EDITS)
def test_an_ingest_on_a_damaged_tree_fails_as_damage_until_the_repair(
    store: tuple[str, Path], edit: str
) -> None:
    url, root = store
    statement, named = EDITS[edit]
    assert _run("journal", "verify", str(root), "--store", url)[0] == 0
    _sql(url, statement)
    _new_file(root)

    code, out, err = _run("journal", "verify", str(root), "--store", url)
    assert (code, out) == (1, "")
    _assert_damage(err, url, named)
    assert _events(url) == 260
    code, _, err = _run("journal", "verify", str(root), "--store", url, "--json")
    assert code == 1
    assert json.loads(err)["kind"] == "integrity"
    assert _events(url) == 260

    assert _run("journal", "repair", "--store", url)[0] == 0
    code, out, err = _run("journal", "verify", str(root), "--store", url)
    assert (code, err) == (0, ""), err
    assert "artifacts: 261, revisions: 261" in out
    assert _run("journal", "audit", "--store", url)[0] == 0


def test_a_start_that_must_catch_up_leaves_on_a_damaged_tree_fails_as_damage(
    store: tuple[str, Path],
) -> None:
    # Leaves 257 and 259 gone: the open gives the events after leaf 258 their leaves, which
    # extends the tree from 259 leaves, reading the partial tile of leaves 256-258.
    url, root = store
    _sql(url, "DELETE FROM journal_entries WHERE position IN (257, 259)")
    code, out, err = _run("journal", "verify", str(root), "--store", url)
    assert (code, out) == (1, "")
    _assert_damage(
        err, url, "tile/0/001.p/3 is hashed from entries 256 to 258; 2 of entries 256 to 258"
    )
    assert _sql(url, "SELECT count(*) FROM journal_entries")[0][0] == 258
    assert _run("journal", "repair", "--store", url)[0] == 0
    assert _run("journal", "verify", str(root), "--store", url)[0] == 0


@pytest.mark.parametrize("write", ["refresh", "ingest_text"])
def test_refresh_and_ingest_text_on_a_damaged_tree_raise_the_integrity_error(
    store: tuple[str, Path], write: str
) -> None:
    url, root = store
    _sql(url, EDITS["tile-deleted"][0])
    gc.collect()
    assembly = build_journal(root, store=url)
    assembly.process.start()  # reads the log, appends nothing
    manager = assembly.manager
    if write == "refresh":
        _new_file(root)
        action = manager.refresh
    else:
        action = lambda: ingest_text(manager, journal_text(NEW, V1))  # noqa: E731
    try:
        with pytest.raises(JournalIntegrityError) as raised:
            action()
    finally:
        assembly.process.stop()
    assert str(raised.value).startswith(f"the transparency tree in {url} is damaged")
    assert f"nenjim journal repair --store {url} rebuilds it" in str(raised.value)
    assert _events(url) == 260
