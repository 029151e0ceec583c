"""A chain table edited behind the engine's back, or written by a newer nenjim: one line.

Each store is loaded with two artifacts of one revision each, then its chain
table is edited with plain SQL: a repeated ``(coordinate, journal_version)``
key (its unique index dropped first, as a table written before the index was
declared lacks it), or a tracking row naming a newer version of the fold.
The store-served Journal, ``nenjim journal append`` and ``nenjim serve``
refuse it with one line naming the store, the table and what is wrong, and
the documented exit code; nothing is appended.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from live_server import SERVE

from journal_texts import Chain, Rel, content, write_chain
from nenjim.cli import main
from nenjim.infrastructure.log import resolve_store_url
from nenjim.journal.exception import JournalIntegrityError, JournalStoreError
from nenjim.journal.impl.ref import StoredJournal, build_journal

V1, V2 = "20260101T000000Z", "20260201T000000Z"
TABLE = "journal_chain_revisions_g1"


def _execute(store: str, sql: str) -> list[tuple[Any, ...]]:
    """Run ``sql`` on the store as an operator would, outside the engine."""
    if store.startswith("sqlite:"):
        with sqlite3.connect(store.removeprefix("sqlite://")) as conn:
            return conn.execute(sql).fetchall()
    parts = urlsplit(store)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        cursor = conn.execute(sql.encode())
        return cursor.fetchall() if cursor.description else []


@pytest.fixture
def loaded(tmp_path: Path, durable_store_url: str) -> tuple[Path, str]:
    """A root of two one-revision chains loaded into a durable store; both."""
    root = tmp_path / "root"
    root.mkdir()
    for n in range(2):
        chain = Chain(f"com.example.a{n}")
        chain.add(V1, (Rel("1.0.0", content(n)),))
        write_chain(root, chain)
    assembly = build_journal(root, store=durable_store_url)
    assembly.process.start()
    assembly.process.stop()
    return root, durable_store_url


def _repeat_a_key(store: str) -> None:
    """Give the row at position 2 the key of the row at position 1."""
    _execute(store, f"DROP INDEX {TABLE}_u0")
    _execute(
        store,
        f"UPDATE {TABLE} SET coordinate = 'com.example.a0' WHERE position = 2",
    )


def _newer_fold(store: str) -> None:
    _execute(store, "UPDATE nenjim_projections SET version = 2 WHERE name = 'journal-chains'")


def _second_revision(root: Path) -> Path:
    """A file of a second revision of ``com.example.a1``, outside the root."""
    chain = Chain("com.example.a1")
    chain.add(V1, (Rel("1.0.0", content(1)),))
    text = chain.add(V2, (Rel("1.0.0", content(1)), Rel("2.0.0", content(7))))
    path = root.parent / f"{V2}.journal"
    path.write_text(text, encoding="utf-8")
    return path


def _events(store: str) -> int:
    return len(_execute(store, "SELECT 1 FROM journal_events"))


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _serve_refused(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[subprocess.CompletedProcess[bytes], str]:
    """``nenjim serve`` of ``url`` run to its refusal: the process, and its one stderr line
    (it wrote nothing on stdout)."""
    assert main(["keys", "new", "example.com/log", "--out", str(tmp_path / "log.key")]) == 0
    capsys.readouterr()
    served = subprocess.run(
        [*SERVE, "--store", url, "--key", str(tmp_path / "log.key"), "--port", "0"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert served.stdout == b""
    return served, _one_line(served.stderr.decode())


def test_a_repeated_key_fails_the_start_naming_store_table_and_key(
    loaded: tuple[Path, str],
) -> None:
    root, url = loaded
    _repeat_a_key(url)
    served = StoredJournal(url, root=root)
    with pytest.raises(JournalIntegrityError) as raised:
        served.start()
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert TABLE in message
    assert "'com.example.a0', '20260101T000000Z'" in message
    assert resolve_store_url(url).display in message


def test_a_repeated_key_is_one_line_and_exit_1_through_the_cli(
    loaded: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, url = loaded
    _repeat_a_key(url)
    before = _events(url)
    capsys.readouterr()
    assert main(["journal", "append", str(_second_revision(root)), "--store", url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    line = _one_line(err)
    assert TABLE in line
    assert "com.example.a0" in line
    assert _events(url) == before  # nothing appended
    served, line = _serve_refused(url, tmp_path, capsys)
    assert served.returncode == 1
    assert TABLE in line
    assert "com.example.a0" in line


def test_a_table_of_a_newer_fold_fails_the_start_saying_so(
    loaded: tuple[Path, str],
) -> None:
    root, url = loaded
    _newer_fold(url)
    served = StoredJournal(url, root=root)
    with pytest.raises(JournalStoreError) as raised:
        served.start()
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert "newer nenjim" in message
    assert "version 2" in message
    assert resolve_store_url(url).where in message


def test_a_table_of_a_newer_fold_is_one_line_and_exit_3_through_the_cli(
    loaded: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, url = loaded
    _newer_fold(url)
    served, line = _serve_refused(url, tmp_path, capsys)
    assert served.returncode == 3
    assert "newer nenjim" in line
    assert "version 2" in line
