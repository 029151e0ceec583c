"""``nenjim serve`` and Journal readers over a PostgreSQL hot standby.

A throwaway primary and a standby made from it with ``pg_basebackup -R``
(streaming replication) run on free ports. Revisions appended on the
primary reach the standby through its WAL; a server over the standby then
signs the same checkpoint (tree size and root) and answers the same as-of
queries as one over the primary, and follows what is appended while it
runs. The standby only reads: nothing opened on it runs DDL or writes, and
a write through it is refused in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from postgres_server import replicated_clusters

from journal_texts import Chain, Rel, content
from nenjim.cli import main
from nenjim.journal import JournalService
from nenjim.journal.exception import JournalStoreError
from nenjim.journal.impl.ref import JournalAppender, JournalFollower, append_revisions

NAME = "registry"
ARTIFACTS = 400
REVISIONS = 5  # 2,000 revisions, then ARTIFACTS more while the servers run
SERVE = [sys.executable, "-m", "nenjim", "serve"]
QUIET = ["--port", "0", "--json", "--no-access-log"]
# How long the standby may take to replay what the primary committed (a bound, not a
# measurement: the wait ends as soon as it has).
REPLAY_TIMEOUT = 60.0


def _chains() -> list[Chain]:
    chains = []
    for index in range(ARTIFACTS):
        chain = Chain(f"com.example.standby.a{index:04d}")
        for step in range(REVISIONS + 1):
            releases = tuple(Rel(f"1.{n}.0", content(n)) for n in range(step + 1))
            chain.add(f"2026010{step + 1}T000000Z", releases)
        chains.append(chain)
    return chains


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[str, str]]:
    """A primary and its hot standby, with the chains' first ``REVISIONS`` revisions
    appended on the primary and replayed on the standby."""
    with replicated_clusters() as (primary, standby):
        texts = [text for chain in _chains() for text in chain.texts[:REVISIONS]]
        assert len(append_revisions(primary, texts, journal=NAME)) == ARTIFACTS * REVISIONS
        _replayed(primary, standby)
        yield primary, standby


@pytest.fixture(scope="module")
def key() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "log.key")
        assert main(["keys", "new", "example.com/log", "--out", str(path)]) == 0
        yield path


def _replayed(primary: str, standby: str) -> None:
    """Wait until the standby has replayed everything the primary has committed."""
    with psycopg.connect(primary, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
    assert row is not None
    target = row[0]
    deadline = time.monotonic() + REPLAY_TIMEOUT
    with psycopg.connect(standby, autocommit=True) as conn:
        while True:
            done = conn.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
            ).fetchone()
            assert done is not None
            assert done[0], "the standby left recovery"
            if done[1]:
                return
            assert time.monotonic() < deadline, f"the standby did not replay up to {target}"
            time.sleep(0.05)


@contextmanager
def _serving(store: str, key: Path) -> Iterator[str]:
    """``nenjim serve`` over ``store``'s named Journal on a free port; its base URL."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [*SERVE, "--store", store, "--journal", NAME, "--key", str(key), *QUIET],
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            errors.seek(0)
            assert line, errors.read().decode()
            yield json.loads(line)["serving"].rstrip("/")
        finally:
            process.terminate()
            process.wait(timeout=60)


def _tree_head(base: str) -> list[str]:
    """The signed checkpoint's origin, tree size and root hash."""
    answer = httpx.get(f"{base}/checkpoint", timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.text.splitlines()[:3]


def _as_of(base: str, coordinate: str, version: str) -> object:
    answer = httpx.get(f"{base}/journal/{coordinate}/as-of/{version}", timeout=30)
    return answer.status_code, answer.json()


def test_serve_over_the_standby_answers_as_the_primary_and_follows_it(
    replicas: tuple[str, str], key: Path
) -> None:
    primary, standby = replicas
    chains = _chains()
    sample = chains[:: ARTIFACTS // 8]
    with _serving(primary, key) as first, _serving(standby, key) as second:
        head = _tree_head(first)
        assert head[1] == str(ARTIFACTS * REVISIONS)
        assert _tree_head(second) == head
        for chain in sample:
            for version in ("20260101T120000Z", "20260104T000000Z", "20261231T000000Z"):
                expected = _as_of(first, chain.artifact, version)
                assert expected[0] == 200
                assert _as_of(second, chain.artifact, version) == expected
        # Appended on the primary while both serve: the standby's server follows.
        appended = append_revisions(
            primary, [chain.texts[REVISIONS] for chain in chains], journal=NAME
        )
        assert len(appended) == ARTIFACTS
        _replayed(primary, standby)
        head = _tree_head(first)
        assert head[1] == str(ARTIFACTS * (REVISIONS + 1))
        assert _tree_head(second) == head
        newest = chains[-1]
        answer = _as_of(second, newest.artifact, "20261231T000000Z")
        assert answer == _as_of(first, newest.artifact, "20261231T000000Z")
        assert answer[1]["journal_version"] == newest.versions[-1]  # type: ignore[index]


def test_a_follower_of_the_standby_sees_what_the_primary_holds(
    replicas: tuple[str, str],
) -> None:
    primary, standby = replicas
    _replayed(primary, standby)
    followers = [JournalFollower(store, journal=NAME) for store in (primary, standby)]
    try:
        views = [follower.poll() for follower in followers]
        assert views[1].coordinates() == views[0].coordinates()
        for coordinate in sorted(views[0].coordinates())[:: ARTIFACTS // 8]:
            assert views[1].revisions(coordinate) == views[0].revisions(coordinate)
    finally:
        for follower in followers:
            follower.close()


def test_a_read_only_command_on_the_standby_answers(
    replicas: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    primary, standby = replicas
    _replayed(primary, standby)
    answers = []
    for store in (primary, standby):
        assert main(["journal", "audit", "--store", store, "--journal", NAME, "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[1] == answers[0]
    assert answers[0]["ok"] is True


def test_writes_through_the_standby_are_refused_in_one_line(
    replicas: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, standby = replicas
    with pytest.raises(JournalStoreError) as raised:
        JournalAppender(standby, journal=NAME)
    assert str(raised.value) == (
        f"store {standby} is read-only (a hot standby, or read-only media): "
        "revisions are appended to the primary's store"
    )
    text = tmp_path / "new.journal"
    text.write_text(Chain("com.example.standby.fresh").add("20260101T000000Z"))
    assert main(["journal", "append", "--store", standby, "--journal", NAME, str(text)]) == 3
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "is read-only (a hot standby" in error
    root = tmp_path / "root"
    (root / "com.example.standby.fresh").mkdir(parents=True)
    (root / "com.example.standby.fresh" / "20260101T000000Z.journal").write_bytes(text.read_bytes())
    assert main(["journal", "verify", str(root), "--store", standby, "--journal", NAME]) == 3
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "is read-only" in error


def test_a_follower_of_the_standby_follows_what_the_primary_appends(
    replicas: tuple[str, str],
) -> None:
    primary, standby = replicas
    fresh = Chain("com.example.standby.followed")
    fresh.add("20260101T000000Z")
    seen = threading.Event()
    errors: list[BaseException] = []
    follower = JournalFollower(standby, journal=NAME, interval=0.05)

    def on_view(view: JournalService) -> None:
        if view.latest(fresh.artifact) is not None:
            seen.set()

    def follow() -> None:
        try:
            follower.follow(on_view)
        except BaseException as error:  # reported by the test
            errors.append(error)
            seen.set()

    thread = threading.Thread(target=follow)
    thread.start()
    try:
        append_revisions(primary, fresh.texts, journal=NAME)
        assert seen.wait(REPLAY_TIMEOUT), "the standby's follower never saw the append"
        assert errors == []
    finally:
        follower.close()
        thread.join(REPLAY_TIMEOUT)
