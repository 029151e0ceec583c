"""No traceback reaches the user: every failure is one line and a documented exit code."""

from __future__ import annotations

import json
import os
import pty
import signal
import sqlite3
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sample_roots import generate_root
from nenjim.admin import stores
from nenjim.cli import main
from nenjim.infrastructure.persistence import Persistence

WIDGET = "com.example.widget"
NENJIM = [sys.executable, "-m", "nenjim"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"nenjim {version('nenjim')}\n"


@pytest.mark.parametrize(
    "argv", [["--help"], ["journal", "--help"], ["journal", "verify", "--help"]]
)
def test_help_documents_exit_codes_and_the_in_memory_default(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code in ("0 success", "2 bad usage", "3 the store cannot be used", "4 an internal error"):
        assert code in text
    assert "130 interrupted (Ctrl-C)" in text
    assert "141 standard output was closed early" in text
    if argv[-2:] != ["verify", "--help"]:
        assert "work in memory: they create no store and no file" in text
    else:
        assert "else in memory: no file" in text


@pytest.mark.parametrize(
    "argv",
    [
        [group, *command, "--help"]
        for group, commands in {
            "journal": [
                *("verify", "digest", "log", "show", "release", "new", "audit"),
                *("checkpoint", "prove", "check-proof", "verify-log"),
            ],
            "projections": ["status", "rebuild"],
            "storage": ["audit", "repair"],
            "log": ["export", "import"],
            "keys": ["new"],
            "serve": [],
        }.items()
        for command in [[], *([c] for c in commands)]
    ],
    ids=" ".join,
)
def test_every_group_and_command_help_lists_the_exit_codes(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code in ("0 success", "1 the Journal was rejected", "3 the store cannot be used"):
        assert code in text
    assert "141 standard output was closed early" in text


def test_ctrl_c_is_one_line_and_exit_130(
    sample: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(stores, "build_journal", interrupted)
    assert main(["journal", "verify", str(sample.root)]) == 130
    assert capsys.readouterr().err == "nenjim: error: interrupted\n"


def _drain(output: int, into: bytearray) -> None:
    """Read ``output`` until the process on its other side has closed it."""
    try:
        while chunk := os.read(output, 1024):
            into += chunk
    except OSError:  # the terminal closed with the process
        pass


def test_a_real_sigint_during_a_load_ends_with_130(tmp_path: Path) -> None:
    root = tmp_path / "big"
    generate_root(root, artifacts=1500, revisions=2)
    # stderr on a terminal: the progress bar tells when the load is under way.
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*NENJIM, "journal", "verify", str(root)],
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    while b"reading revision files" not in seen:
        seen += os.read(leader, 1024)
    # Both outputs are read while the process ends, so its writes never block. A Ctrl-C
    # that lands in a destructor is dropped by design and the command goes on, so Ctrl-C
    # is pressed again, as a user would, until the process ends.
    rest, printed = bytearray(), bytearray()
    assert process.stdout is not None
    readers = [
        threading.Thread(target=_drain, args=(leader, rest)),
        threading.Thread(target=_drain, args=(process.stdout.fileno(), printed)),
    ]
    for reader in readers:
        reader.start()
    code = None
    for _ in range(600):
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            continue
    if code is None:
        process.kill()
        process.wait()
    for reader in readers:
        reader.join(timeout=20)
    assert code == 130
    assert bytes(printed) == b""
    os.close(leader)
    text = (seen + bytes(rest)).decode()
    assert "Traceback" not in text
    assert text.rstrip().endswith("nenjim: error: interrupted")


def test_a_ctrl_c_landing_in_a_destructor_prints_no_traceback(tmp_path: Path) -> None:
    # Seen for real: a SIGINT while psycopg closes a connection lands in its __del__,
    # where Python cannot raise it and prints "Exception ignored in ...".
    file = tmp_path / "data"
    file.write_bytes(b"x")
    script = (
        "import sys\n"
        "from nenjim import cli\nfrom nenjim.cli import journal_commands as cli_commands\n"
        "class Connection:\n"
        "    def __del__(self):\n"
        "        raise KeyboardInterrupt\n"
        "digest = cli_commands.digest\n"
        "def closing_a_connection_first(args):\n"
        "    Connection()\n"
        "    return digest(args)\n"
        "cli_commands.digest = closing_a_connection_first\n"
        f"sys.argv = ['nenjim', 'journal', 'digest', {str(file)!r}]\n"
        "cli.entry()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout.startswith("sha256:")


def test_a_ctrl_c_once_the_work_is_done_changes_nothing() -> None:
    # Seen for real: a SIGINT while a PostgreSQL pool shuts down, after the output.
    script = (
        "import atexit, os, signal, sys, time\n"
        "atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.1)))\n"
        "from nenjim import cli\n"
        "sys.argv = ['nenjim', '--version']\n"
        "cli.entry()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout.startswith("nenjim ")


def test_a_closed_stdout_is_silent_with_exit_141(sample: Any) -> None:
    process = subprocess.Popen(
        [*NENJIM, "journal", "log", str(sample.root), WIDGET],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()  # as `| head -1` does once it has its line
    assert process.wait(timeout=60) == 141
    assert process.stderr is not None
    assert process.stderr.read() == b""


def test_every_command_that_prints_is_silent_with_exit_141_when_stdout_closes(
    sample: Any, tmp_path: Path
) -> None:
    journal_store = f"sqlite://{tmp_path / 'journal.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", journal_store]) == 0
    # Two rebuilds of one projection at once: one would lose (exit 1). Each gets its store.
    second_store = f"sqlite://{tmp_path / 'journal-2.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", second_store]) == 0
    state_store = f"sqlite://{tmp_path / 'state.db'}"
    persistence = Persistence.open(state_store)
    persistence.contents.put_text("hello")
    persistence.close()
    root, head = str(sample.root), str(sample.widget_head)
    journal = ["--store", journal_store]
    moved = str(tmp_path / "moved.log")
    assert main(["log", "export", "--store", journal_store, "--out", moved]) == 0
    commands = [
        ["--help"],
        ["--version"],
        ["journal", "verify", "--help"],
        ["journal", "verify", root, *journal],
        ["journal", "verify", root, "--json"],
        ["journal", "log", root, WIDGET, *journal],
        ["journal", "log", root, WIDGET, "--json"],
        ["journal", "show", root, WIDGET, *journal],
        ["journal", "show", root, WIDGET, "--json"],
        ["journal", "release", root, WIDGET, "1.0.1"],
        ["journal", "release", root, WIDGET, "1.0.1", "--json"],
        ["journal", "digest", head],
        ["journal", "digest", head, "--json"],
        ["journal", "new", root, WIDGET, "--stdout"],
        ["journal", "new", root, WIDGET, "--stdout", "--json"],
        ["journal", "audit", *journal],
        ["journal", "audit", *journal, "--json"],
        ["projections", "rebuild", "journal-chains", "--store", journal_store],
        ["projections", "rebuild", "journal-chains", "--store", second_store, "--json"],
        ["projections", "status", "--store", journal_store],
        ["projections", "status", "--store", journal_store, "--json"],
        ["storage", "audit", "--store", state_store],
        ["storage", "audit", "--store", state_store, "--json"],
        ["storage", "repair", "--store", state_store],
        ["storage", "repair", "--store", state_store, "--json"],
        ["log", "export", "--store", journal_store],
        ["log", "export", "--store", state_store, "--out", str(tmp_path / "a.log")],
        ["log", "export", "--store", state_store, "--out", str(tmp_path / "b.log"), "--json"],
        ["log", "import", "--store", f"sqlite://{tmp_path / 'import-1.db'}", moved],
        ["log", "import", "--store", f"sqlite://{tmp_path / 'import-2.db'}", moved, "--json"],
    ]
    # All at once (each reader has gone before its writer prints): a few seconds, not a minute.
    processes = []
    for command in commands:
        process = subprocess.Popen(
            [*NENJIM, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdout is not None
        process.stdout.close()  # as `| head -1` does once it has its line
        processes.append((command, process))
    for command, process in processes:
        assert process.wait(timeout=120) == 141, command
        assert process.stderr is not None
        assert process.stderr.read() == b"", command


def test_log_piped_into_head_prints_no_traceback(sample: Any) -> None:
    result = subprocess.run(
        [
            *("sh", "-c", f'"$0" -m nenjim journal log "$1" {WIDGET} | head -1'),
            *(sys.executable, str(sample.root)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout == f"{WIDGET}: 2 revisions\n"
    assert result.stderr == ""


def _tamper(database: Path, notification: int, edit: str) -> None:
    """Edit one event of the log and drop the persisted projections, so that start-up
    folds the edited log (a restart over intact persisted rows and files reads neither)."""
    with sqlite3.connect(database) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        for (table,) in tables:
            if table == "nenjim_projections" or table.startswith("journal_chain_revisions_g"):
                conn.execute(f"DROP TABLE {table}")
        state, topic = conn.execute(
            "SELECT state, topic FROM journal_events WHERE rowid = ?", (notification,)
        ).fetchone()
        if edit == "text":
            document = json.loads(state)
            document["text"] += "# edited behind the engine's back\n"
            conn.execute(
                "UPDATE journal_events SET state = ? WHERE rowid = ?",
                (json.dumps(document).encode(), notification),
            )
        else:
            conn.execute(
                "UPDATE journal_events SET topic = ? WHERE rowid = ?",
                (topic + "Nowhere", notification),
            )


@pytest.mark.parametrize("edit", ["text", "topic"])
def test_a_corrupt_log_at_start_up_is_one_line(
    sample: Any, tmp_path: Path, edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "log.db"
    store = f"sqlite://{database}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    _tamper(database, 1, edit)
    capsys.readouterr()
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("nenjim: error: ")
    assert err.count("\n") == 1


def test_an_unexpected_error_is_one_line_with_exit_4(
    sample: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(stores, "build_journal", broken)
    assert main(["journal", "verify", str(sample.root)]) == 4
    assert capsys.readouterr().err == (
        "nenjim: error: internal error: RuntimeError: boom\\nsecond line "
        "(please report this with the command)\n"
    )
    assert main(["journal", "verify", str(sample.root), "--json"]) == 4
    error = json.loads(capsys.readouterr().err)
    assert error == {
        "error": "internal error: RuntimeError: boom\\nsecond line "
        "(please report this with the command)",
        "kind": "internal",
        "exit_code": 4,
    }


def test_control_characters_in_a_message_stay_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "verify", str(tmp_path / "a\nb\rc\x1bd")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "a\\nb\\rc\\x1bd" in err
