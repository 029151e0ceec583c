"""A store belongs to one Journal, on every durable store kind, even under a race."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from journal_texts import Chain, Rel, content, write_chain
from nenjim.journal.exception import JournalStoreError
from nenjim.journal.impl.ref import build_journal

_RACER = """
import sys
from nenjim.journal.exception import JournalStoreError
from nenjim.journal.impl.ref import build_journal
sys.stdin.readline()  # open together
try:
    assembly = build_journal(sys.argv[1], store=sys.argv[2])
    try:
        assembly.process.start()  # the store is claimed here, before the first append
    finally:
        assembly.process.stop()
except JournalStoreError as error:
    print("refused", error)
else:
    print("opened")
"""


def _root(path: Path, artifact: str) -> Path:
    chain = Chain(artifact)
    chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    write_chain(path, chain)
    return path


def _started(root: Path, store: str, journal: str | None = None) -> frozenset[str]:
    assembly = build_journal(root, store=store, journal=journal)
    assembly.process.start()
    coordinates = frozenset(str(c) for c in assembly.service.coordinates())
    assembly.process.stop()
    return coordinates


def test_a_second_root_is_refused_before_anything_is_read(
    tmp_path: Path, durable_store_url: str
) -> None:
    first = _root(tmp_path / "first", "com.example.first")
    second = _root(tmp_path / "second", "com.example.second")
    assert _started(first, durable_store_url) == {"com.example.first"}
    with pytest.raises(JournalStoreError) as refused:
        build_journal(second, store=durable_store_url)
    message = str(refused.value)
    assert f"holds the Journal of root {first.resolve()}, " in message
    assert f"not the Journal of root {second.resolve()}" in message
    assert _started(first, durable_store_url) == {"com.example.first"}


@pytest.mark.parametrize("round_", range(2))
def test_two_journals_racing_for_an_empty_store_cannot_both_win(
    tmp_path: Path, durable_store_url: str, round_: int
) -> None:
    roots = [_root(tmp_path / f"r{i}", f"com.example.r{i}") for i in range(2)]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(root), durable_store_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root in roots
    ]
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    results = [racer.communicate(timeout=120) for racer in racers]
    for racer, (_, err) in zip(racers, results, strict=True):
        assert racer.returncode == 0, err
    outcomes = sorted(out.split()[0] for out, _ in results)
    assert outcomes == ["opened", "refused"], results
    winner = roots[[out.startswith("opened") for out, _ in results].index(True)]
    # The loser wrote nothing: the store holds the winner's revision alone.
    assert _started(winner, durable_store_url) == {f"com.example.{winner.name}"}


@pytest.fixture
def journal_names(postgres_url: str) -> Iterator[list[str]]:
    """Two fresh Journal names; their schemas are dropped afterwards."""
    names = [f"t{uuid.uuid4().hex[:12]}" for _ in range(2)]
    yield names
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP SCHEMA IF EXISTS "journal_{name}" CASCADE')


def test_named_journals_share_a_postgresql_database_in_schemas_of_their_own(
    tmp_path: Path, postgres_url: str, journal_names: list[str]
) -> None:
    server = urlunsplit(urlsplit(postgres_url)._replace(query="pool_size=1"))
    first, second = journal_names
    alpha = _root(tmp_path / "alpha", "com.example.alpha")
    beta = _root(tmp_path / "beta", "com.example.beta")
    assert _started(alpha, server, first) == {"com.example.alpha"}
    assert _started(beta, server, second) == {"com.example.beta"}
    # Shared on purpose: the second root's files join the first's Journal.
    assert _started(beta, server, first) == {"com.example.alpha", "com.example.beta"}
    with psycopg.connect(postgres_url) as conn:
        for name, expected in ((first, 2), (second, 1)):
            row = conn.execute(f'SELECT count(*) FROM "journal_{name}".journal_events').fetchone()
            assert row == (expected,)
            owner = conn.execute(
                f'SELECT identity FROM "journal_{name}".nenjim_identity'
            ).fetchone()
            assert owner == (f"name:{name}",)


def test_a_schema_in_the_url_wins_over_the_journal_name(
    tmp_path: Path, postgres_schema_url: str, journal_names: list[str]
) -> None:
    alpha = _root(tmp_path / "alpha", "com.example.alpha")
    assert _started(alpha, postgres_schema_url, journal_names[0]) == {"com.example.alpha"}
    schema = urlsplit(postgres_schema_url).query.split("schema=")[1].split("&")[0]
    server = urlunsplit(urlsplit(postgres_schema_url)._replace(query=""))
    with psycopg.connect(server) as conn:
        row = conn.execute(f'SELECT identity FROM "{schema}".nenjim_identity').fetchone()
        assert row == (f"name:{journal_names[0]}",)
        made = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (f"journal_{journal_names[0]}",)
        ).fetchone()
    assert made is None
    with pytest.raises(JournalStoreError, match=f"the Journal named '{journal_names[0]}'"):
        build_journal(alpha, store=postgres_schema_url, journal=journal_names[1])
