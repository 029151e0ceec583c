"""Stores on the command line: none by default, one Journal per store, existing ones to read."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from nenjim.cli import main

WIDGET = "com.example.widget"


def _files(directory: Path) -> set[Path]:
    return set(directory.rglob("*"))


def _events(database: Path) -> int:
    with sqlite3.connect(database) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM journal_events").fetchone()[0])


@pytest.fixture
def no_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No ``--store`` and no ``$NENJIM_STORE_URL``; the working directory is an empty one."""
    monkeypatch.delenv("NENJIM_STORE_URL")
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return workdir


def test_without_a_store_the_commands_write_nothing_anywhere(
    sample: Any, no_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(sample.root)
    before = _files(sample.root.parent)
    assert main(["journal", "verify", root]) == 0
    assert main(["journal", "log", root, WIDGET]) == 0
    assert main(["journal", "show", root, WIDGET]) == 0
    assert main(["journal", "release", root, WIDGET, "1.0.1"]) == 0
    assert main(["journal", "digest", str(sample.widget_head)]) == 0
    assert main(["journal", "new", root, WIDGET, "--stdout"]) == 0
    assert _files(sample.root.parent) == before
    assert main(["journal", "new", root, WIDGET]) == 0
    draft = Path(capsys.readouterr().out.splitlines()[-1])
    assert _files(sample.root.parent) == before | {draft}


def test_verify_dot_inside_the_root_creates_nothing_in_it(
    sample: Any, no_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(sample.root)
    before = _files(sample.root)
    assert main(["journal", "verify", "."]) == 0
    assert "artifacts: 2, revisions: 3" in capsys.readouterr().out
    assert _files(sample.root) == before


def test_a_root_that_does_not_exist_leaves_no_file_behind(
    tmp_path: Path, no_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "verify", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: journal root does not exist")
    assert err.count("\n") == 1
    assert _files(tmp_path) == {no_store}


@pytest.mark.parametrize("journal", [[], ["--journal", "widgets"]], ids=["by root", "named"])
@pytest.mark.parametrize("command", ["verify", "log", "show"])
def test_a_root_that_does_not_exist_creates_no_named_store(
    tmp_path: Path, command: str, journal: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "new.db"
    extra = [] if command == "verify" else [WIDGET]
    arguments = [command, str(tmp_path / "missing"), *extra, "--store", f"sqlite://{database}"]
    assert main(["journal", *arguments, *journal]) == 1
    err = capsys.readouterr().err
    assert err == f"nenjim: error: journal root does not exist (path {tmp_path / 'missing'})\n"
    assert not database.exists()


def test_a_root_that_does_not_exist_creates_no_postgresql_schema(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_absent_{uuid.uuid4().hex[:12]}"
    url = urlsplit(postgres_url)._replace(query=f"schema={schema}").geturl()
    try:
        assert main(["journal", "verify", str(tmp_path / "missing"), "--store", url]) == 1
        assert "journal root does not exist" in capsys.readouterr().err
        with psycopg.connect(postgres_url) as conn:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
            assert found.fetchone() is None
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_store_option_wins_over_the_environment(
    sample: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = tmp_path / "chosen.db"
    monkeypatch.setenv("NENJIM_STORE_URL", f"sqlite://{tmp_path / 'ignored.db'}")
    assert main(["journal", "verify", str(sample.root), "--store", f"sqlite://{chosen}"]) == 0
    assert _events(chosen) == 3
    assert not (tmp_path / "ignored.db").exists()


def test_a_named_store_keeps_history_after_the_files_are_gone(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite://{tmp_path / 'kept.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    for path in sample.root.rglob("*.journal"):
        path.unlink()
    capsys.readouterr()
    assert main(["journal", "log", str(sample.root), WIDGET, "--store", store]) == 0
    assert "2 revisions" in capsys.readouterr().out


def test_unsupported_store_url_is_a_usage_error(
    sample: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "verify", str(sample.root), "--store", "mysql://x/y"]) == 2
    assert "unsupported store URL" in capsys.readouterr().err


def test_incompatible_store_is_refused_with_one_line(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite://{tmp_path / 'old.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("UPDATE nenjim_schema SET version = 0")
    capsys.readouterr()
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"nenjim: error: SQLite database {tmp_path / 'old.db'}")
    assert "schema version 0" in err
    assert err.count("\n") == 1


# A store belongs to one Journal


def test_a_second_root_is_refused_naming_both(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "one.db"
    store = f"sqlite://{database}"
    other = tmp_path / "other"
    shutil.copytree(sample.root / "com.example.core", other / "com.example.core")
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()

    assert main(["journal", "verify", str(other), "--store", store]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert f"holds the Journal of root {sample.root.resolve()}, " in err
    assert f"not the Journal of root {other.resolve()}" in err
    assert _events(database) == 3


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_one_store_reached_every_way_refuses_a_second_root(
    sample: Any,
    kind: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tmp_path = sample.root.parent
    other = tmp_path / "other"
    shutil.copytree(sample.root / "com.example.core", other / "com.example.core")
    if kind == "sqlite":
        monkeypatch.chdir(tmp_path)
        database = tmp_path / "one.db"
        # One file, spelled four ways.
        spellings = [
            f"sqlite://{database}",
            "sqlite:one.db",
            "sqlite:./one.db",
            f"sqlite:///{database}",
        ]
    else:
        url: str = request.getfixturevalue("postgres_schema_url")
        spellings = [url, url.replace("127.0.0.1", "localhost")]
    monkeypatch.delenv("NENJIM_STORE_URL")
    assert main(["journal", "verify", str(sample.root), "--store", spellings[0]]) == 0
    capsys.readouterr()
    refusal = f"holds the Journal of root {sample.root.resolve()}, not the Journal of root "
    for spelling in spellings:
        assert main(["journal", "verify", str(other), "--store", spelling]) == 3, spelling
        assert refusal in capsys.readouterr().err
        monkeypatch.setenv("NENJIM_STORE_URL", spelling)
        assert main(["journal", "verify", str(other)]) == 3, spelling
        assert main(["journal", "verify", str(other), "--json"]) == 3, spelling
        captured = capsys.readouterr()
        assert refusal in captured.err.splitlines()[0]
        assert json.loads(captured.err.splitlines()[1])["kind"] == "store"
        monkeypatch.delenv("NENJIM_STORE_URL")
        # The owner still loads through every spelling.
        assert main(["journal", "verify", str(sample.root), "--store", spelling]) == 0
        assert "artifacts: 2, revisions: 3" in capsys.readouterr().out


def test_an_empty_root_does_not_start_with_another_roots_chains(
    sample: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", f"sqlite://{tmp_path / 'env.db'}")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["journal", "verify", str(sample.root)]) == 0
    capsys.readouterr()
    assert main(["journal", "verify", str(empty)]) == 3
    assert "holds the Journal of root" in capsys.readouterr().err


def test_the_same_root_by_another_path_is_the_same_journal(
    sample: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite://{tmp_path / 'one.db'}"
    link = tmp_path / "link"
    link.symlink_to(sample.root)
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    assert main(["journal", "verify", str(link), "--store", store]) == 0
    monkeypatch.chdir(sample.root)
    assert main(["journal", "verify", ".", "--store", store]) == 0


def test_roots_sharing_a_store_on_purpose_use_one_name(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite://{tmp_path / 'shared.db'}"
    copy = tmp_path / "checkout"
    shutil.copytree(sample.root, copy)
    assert main(["journal", "verify", str(sample.root), "--store", store, "--journal", "acme"]) == 0
    assert main(["journal", "verify", str(copy), "--store", store, "--journal", "acme"]) == 0
    capsys.readouterr()
    assert main(["journal", "verify", str(copy), "--store", store]) == 3
    assert "holds the Journal named 'acme', not the Journal of root" in capsys.readouterr().err
    assert main(["journal", "verify", str(copy), "--store", store, "--journal", "other"]) == 3
    assert "holds the Journal named 'acme', not the Journal named 'other'" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("name", ["Acme", "1st", "a-b", "", "x" * 49])
def test_a_bad_journal_name_is_a_usage_error(
    sample: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "verify", str(sample.root), "--journal", name]) == 2
    assert "argument --journal: invalid Journal name" in capsys.readouterr().err


def test_a_store_written_before_identities_adopts_its_next_journal(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "old.db"
    store = f"sqlite://{database}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    with sqlite3.connect(database) as conn:
        conn.execute("DROP TABLE nenjim_identity")  # as an older build wrote it
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    other = tmp_path / "other"
    other.mkdir()
    capsys.readouterr()
    assert main(["journal", "verify", str(other), "--store", store]) == 3
    assert f"holds the Journal of root {sample.root.resolve()}" in capsys.readouterr().err


# Stores that are only read must exist


@pytest.mark.parametrize(
    "command",
    [["journal", "audit"], ["projections", "rebuild", "journal-chains"], ["projections", "status"]],
    ids=["audit", "rebuild", "status"],
)
def test_reading_a_store_that_does_not_exist_fails_and_creates_nothing(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    assert main([*command, "--store", f"sqlite://{missing}"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"nenjim: error: SQLite store {missing} does not exist\n"
    assert not missing.exists()
    assert main([*command, "--store", "memory:"]) == 3
    assert "memory: is empty: there is no log to read" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [["journal", "audit"], ["projections", "rebuild", "journal-chains"], ["projections", "status"]],
    ids=["audit", "rebuild", "status"],
)
def test_reading_a_postgresql_schema_that_does_not_exist_fails_and_creates_nothing(
    command: list[str], postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_absent_{uuid.uuid4().hex[:12]}"
    url = urlsplit(postgres_url)._replace(query=f"schema={schema}").geturl()
    try:
        assert main([*command, "--store", url]) == 3
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            f"nenjim: error: PostgreSQL schema {schema!r} holds no log 'journal_events'\n"
        )
        with psycopg.connect(postgres_url) as conn:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
            assert found.fetchone() is None
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize(
    "command",
    [["journal", "audit"], ["projections", "rebuild", "journal-chains"], ["projections", "status"]],
    ids=["audit", "rebuild", "status"],
)
def test_reading_a_database_without_a_journal_log_fails(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    assert main([*command, "--store", f"sqlite://{other}"]) == 3
    assert capsys.readouterr().err == (
        f"nenjim: error: SQLite store {other} holds no log 'journal_events'\n"
    )


@pytest.mark.parametrize(
    "command",
    [["journal", "audit"], ["projections", "rebuild", "journal-chains"], ["projections", "status"]],
    ids=["audit", "rebuild", "status"],
)
def test_reading_needs_a_store(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NENJIM_STORE_URL")
    assert main(command) == 2
    assert "needs a store: --store URL or $NENJIM_STORE_URL" in capsys.readouterr().err


def test_audit_checks_the_journal_name_it_is_given(
    sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite://{tmp_path / 'named.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store, "--journal", "acme"]) == 0
    assert main(["journal", "audit", "--store", store, "--journal", "acme"]) == 0
    capsys.readouterr()
    assert main(["journal", "audit", "--store", store, "--journal", "zeta"]) == 3
    assert "holds the Journal named 'acme', not the Journal named 'zeta'" in (
        capsys.readouterr().err
    )


# Stores that cannot be written


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/proc/nenjim-store.db", "unable to open database file"),
        ("{tmp}/no/such/dir/store.db", "directory {tmp}/no/such/dir does not exist"),
        ("{tmp}", "is a directory"),
    ],
    ids=["read-only file system", "missing directory", "a directory"],
)
def test_an_unwritable_store_is_one_line_naming_the_path(
    sample: Any, tmp_path: Path, path: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    database = path.format(tmp=tmp_path)
    assert main(["journal", "verify", str(sample.root), "--store", f"sqlite://{database}"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("nenjim: error: ")
    assert database in err
    assert reason.format(tmp=tmp_path) in err
    assert err.count("\n") == 1


def test_a_read_only_working_directory_is_no_problem(
    sample: Any, no_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir("/proc")  # nobody, root included, can create a file here
    assert main(["journal", "verify", str(sample.root)]) == 0
    assert main(["journal", "show", str(sample.root), WIDGET]) == 0
    out, err = capsys.readouterr()
    assert "artifacts: 2, revisions: 3" in out
    assert err == ""
