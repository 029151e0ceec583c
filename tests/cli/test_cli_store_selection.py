"""Every command takes its store the same way: ``--store URL``, else ``$NENJIM_STORE_URL``,
and ``--journal NAME`` wherever a Journal's store is meant (all but ``log import``).

One table of every command that takes a store; each rule is checked on every row.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.infrastructure.persistence import Persistence

WIDGET = "com.example.widget"
HEAD = "20260201T000000Z"


@dataclass(frozen=True)
class Files:
    """What the commands are given: a root, an export of the store, a signer key."""

    root: Path
    export: Path
    key: Path
    busy_port: int


@dataclass(frozen=True)
class Command:
    """One command of the table: its arguments, and how it takes its store."""

    name: str
    argv: Callable[[Files], list[str]]
    loads_root: bool = False  # works in memory without a store
    takes_journal: bool = True
    imports: bool = False  # needs an empty store

    def __str__(self) -> str:
        return self.name


COMMANDS = [
    Command("journal verify", lambda f: ["journal", "verify", str(f.root)], loads_root=True),
    Command("journal log", lambda f: ["journal", "log", str(f.root), WIDGET], loads_root=True),
    Command("journal show", lambda f: ["journal", "show", str(f.root), WIDGET], loads_root=True),
    Command(
        "journal release",
        lambda f: ["journal", "release", str(f.root), WIDGET, "1.0.1"],
        loads_root=True,
    ),
    Command(
        "journal new",
        lambda f: ["journal", "new", str(f.root), WIDGET, "--stdout"],
        loads_root=True,
    ),
    Command("journal audit", lambda f: ["journal", "audit"]),
    Command("journal checkpoint", lambda f: ["journal", "checkpoint", "--key", str(f.key)]),
    Command("journal prove", lambda f: ["journal", "prove", WIDGET, HEAD, "--key", str(f.key)]),
    Command("projections status", lambda f: ["projections", "status"]),
    Command("projections rebuild", lambda f: ["projections", "rebuild", "journal-chains"]),
    Command("storage audit", lambda f: ["storage", "audit"]),
    Command("storage repair", lambda f: ["storage", "repair"]),
    Command("log export", lambda f: ["log", "export"]),
    Command(
        "log import", lambda f: ["log", "import", str(f.export)], takes_journal=False, imports=True
    ),
    # Its store is checked before it listens: on a port in use, a store it accepted ends in
    # "cannot listen" (exit 3, kind unavailable) instead of serving forever.
    Command("serve", lambda f: ["serve", "--key", str(f.key), "--port", str(f.busy_port)]),
]
NAMED = [c for c in COMMANDS if c.takes_journal]


@pytest.fixture
def files(sample: Any, tmp_path: Path) -> Iterator[Files]:
    key = tmp_path / "log.key"
    assert main(["keys", "new", "example.com/log", "--out", str(key)]) == 0
    with socket.create_server(("127.0.0.1", 0)) as listening:
        yield Files(sample.root, tmp_path / "moved.log", key, listening.getsockname()[1])


@pytest.fixture
def store(files: Files, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An SQLite store of the Journal named alpha, with durable state beside it."""
    url = f"sqlite:///{tmp_path / 'alpha.db'}"
    assert main(["journal", "verify", str(files.root), "--store", url, "--journal", "alpha"]) == 0
    persistence = Persistence.open(url)
    persistence.contents.put_text("hello")
    persistence.close()
    assert main(["log", "export", "--store", url, "--out", str(files.export)]) == 0
    capsys.readouterr()
    return url


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _target(command: Command, store: str, tmp_path: Path) -> str:
    """The store a row works on: the shared one, or a new one to import into."""
    return f"sqlite:///{tmp_path / 'imported.db'}" if command.imports else store


def _named(command: Command, name: str = "alpha") -> list[str]:
    return ["--journal", name] if command.takes_journal else []


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_the_variable_names_the_store(
    command: Command,
    *,
    files: Files,
    store: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", _target(command, store, tmp_path))
    code, out, err = _run([*command.argv(files), *_named(command), "--json"], capsys)
    if command.name == "serve":
        assert code == 3
        assert json.loads(err)["kind"] == "unavailable"
        assert "cannot listen" in json.loads(err)["error"]
    else:
        assert (code, err) == (0, "")
        assert out
    if command.imports:
        assert (tmp_path / "imported.db").is_file()


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_store_wins_over_the_variable(
    command: Command,
    *,
    files: Files,
    store: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", _target(command, store, tmp_path))
    missing = tmp_path / "no-such-directory" / "store.db"
    argv = [*command.argv(files), *_named(command), "--store", f"sqlite:///{missing}"]
    code, out, err = _run(argv, capsys)
    assert code == 3, err
    assert out == ""
    assert err.startswith("nenjim: error: ")
    assert str(missing) in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", NAMED, ids=str)
def test_journal_selects_the_journal_and_refuses_another(
    command: Command,
    files: Files,
    store: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", store)
    code, out, err = _run([*command.argv(files), "--journal", "beta", "--json"], capsys)
    assert code == 3
    assert out == ""
    error = json.loads(err)
    assert error["kind"] == "store"
    assert "'alpha'" in error["error"]
    assert "'beta'" in error["error"]


@pytest.mark.parametrize("command", NAMED, ids=str)
def test_a_malformed_journal_name_is_bad_usage(
    command: Command, files: Files, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run([*command.argv(files), "--store", store, "--journal", "Bad-Name"], capsys)
    assert code == 2
    assert out == ""
    assert "argument --journal: invalid Journal name 'Bad-Name'" in err


def test_only_log_import_takes_no_journal(
    files: Files, store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"sqlite:///{tmp_path / 'imported.db'}"
    argv = ["log", "import", str(files.export), "--store", target, "--journal", "alpha"]
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert "unrecognized arguments: --journal alpha" in err
    assert not (tmp_path / "imported.db").exists()


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_without_a_store_only_the_root_loading_commands_run_in_memory(
    command: Command,
    files: Files,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("NENJIM_STORE_URL")
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = _run([*command.argv(files), "--json"], capsys)
    if command.loads_root:
        assert (code, err) == (0, "")
    else:
        assert code == 2
        assert json.loads(err) == {
            "error": f"nenjim {command.name}: needs a store: --store URL or $NENJIM_STORE_URL",
            "exit_code": 2,
            "kind": "usage",
        }
        assert out == ""
    assert sorted(tmp_path.rglob("*")) == before  # no store was created anywhere


@pytest.fixture
def named_postgres(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A PostgreSQL URL naming no schema, and a Journal name of this test's own."""
    name = f"t{uuid.uuid4().hex[:12]}"
    yield urlunsplit(urlsplit(postgres_url)._replace(query="")), name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "journal_{name}" CASCADE')


def test_on_postgresql_journal_selects_its_schema_for_every_command(
    named_postgres: tuple[str, str], files: Files, capsys: pytest.CaptureFixture[str]
) -> None:
    url, name = named_postgres
    assert main(["journal", "verify", str(files.root), "--store", url, "--journal", name]) == 0
    persistence = Persistence.open(f"{url}?schema=journal_{name}")
    persistence.contents.put_text("beside the Journal")
    persistence.close()
    capsys.readouterr()
    for command in NAMED:
        if command.name == "serve":
            continue
        code, out, err = _run([*command.argv(files), "--store", url, "--journal", name], capsys)
        assert (code, err) == (0, ""), command.name
        assert out, command.name
    code, out, _ = _run(
        ["projections", "status", "--store", url, "--journal", name, "--json"], capsys
    )
    assert code == 0
    logs = {p["log"] for p in json.loads(out)["projections"]}
    assert logs == {"journal", "storage"}
