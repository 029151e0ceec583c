"""``nenjim log export|import``: the command line's conventions (JSON, exit codes, stdin,
atomic ``--out``, progress bar), on SQLite; the moves themselves are in
``tests/durable/test_moving_stores.py``."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nenjim.cli import main
from nenjim.cli.progress import BAR_WIDTH
from nenjim.infrastructure.persistence import Persistence

NENJIM = [sys.executable, "-m", "nenjim"]


@pytest.fixture
def source(sample: Any, tmp_path: Path) -> str:
    """An SQLite store holding a Journal (3 revisions) and durable state (1 blob)."""
    store = f"sqlite://{tmp_path / 'source.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    persistence = Persistence.open(store)
    persistence.contents.put_text("hello")
    persistence.close()
    return store


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_export_to_standard_output_is_the_file_out_writes(
    source: str, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["log", "export", "--store", source]) == 0
    printed = capsysbinary.readouterr()
    assert printed.err == b""
    out = tmp_path / "out.log"
    assert main(["log", "export", "--store", source, "--out", str(out), "--json"]) == 0
    assert out.read_bytes() == printed.out
    assert printed.out.startswith(b'{"kind":"header","format":"nenjim-log-export","version":1,')


def test_export_json_names_what_was_written(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.log"
    code, printed, err = _run(
        capsys, "log", "export", "--store", source, "--out", str(out), "--json"
    )
    assert (code, err) == (0, "")
    document = json.loads(printed)
    assert document["events"] == {"journal": 3, "storage": 1}
    assert document["logs"] == [
        {"log": "journal", "identity": document["logs"][0]["identity"]},
        {"log": "storage", "identity": None},
    ]
    assert document["logs"][0]["identity"].startswith("root:")
    assert document["lines"] == len(out.read_bytes().splitlines()) - 1
    assert (document["store"], document["out"]) == (source, str(out))
    code, printed, _ = _run(capsys, "log", "export", "--store", source, "--out", str(out))
    assert printed == f"exported 4 events from {source} to {out}: journal 3, storage 1\n"


def test_import_from_standard_input_with_json(source: str, tmp_path: Path) -> None:
    exported = subprocess.run(
        [*NENJIM, "log", "export", "--store", source], capture_output=True, check=True
    ).stdout
    target = f"sqlite://{tmp_path / 'target.db'}"
    done = subprocess.run(
        [*NENJIM, "log", "import", "--store", target, "-", "--json"],
        input=exported,
        capture_output=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    report = json.loads(done.stdout)
    assert report["file"] == "standard input"
    assert report["events"] == {"journal": 3, "storage": 1}
    assert report["journal_audit"] == {"events": 3, "artifacts": 2, "revisions": 3}
    assert report["storage_audit"]["ok"] is True
    assert report["renumbered"] is False
    assert report["rebuilt"] == [
        "journal-chains: 3 revisions of 2 artifacts",
        "agent-runs: 0 runs of 0 agents from 1 events",
    ]


def test_a_damaged_standard_input_is_one_line_in_json(source: str, tmp_path: Path) -> None:
    exported = subprocess.run(
        [*NENJIM, "log", "export", "--store", source], capture_output=True, check=True
    ).stdout
    target = tmp_path / "target.db"
    done = subprocess.run(
        [*NENJIM, "log", "import", "--store", f"sqlite://{target}", "-", "--json"],
        input=exported[:-10],
        capture_output=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, b"")
    assert json.loads(done.stderr) == {
        "error": "standard input line 8: truncated (the line has no end); nothing was written",
        "exit_code": 1,
        "kind": "failure",
    }
    assert not target.exists()


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (
            ["log", "export"],
            2,
            "nenjim log export: error: needs a store: --store URL or $NENJIM_STORE_URL",
        ),
        (["log", "import", "x.log"], 2, "needs a store"),
        (["log", "export", "--store", "memory:"], 2, "argument --store: memory: keeps nothing"),
        (["log", "import", "--store", "memory:", "x.log"], 2, "memory: keeps nothing"),
        (["log", "export", "--store", "mysql://x"], 2, "unsupported store URL"),
        (["log", "export", "--journal", "Bad", "--store", "sqlite:x.db"], 2, "invalid Journal"),
        (["log", "import", "--store", "sqlite:x.db", "missing.log"], 1, "cannot read missing.log"),
    ],
)
def test_usage_and_unreadable_files_are_one_line(
    *,
    argv: list[str],
    code: int,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NENJIM_STORE_URL", raising=False)
    done, out, err = _run(capsys, *argv)
    assert (done, out) == (code, "")
    assert message in err
    assert err.splitlines()[-1].count("error") == 1
    assert not (tmp_path / "x.db").exists()


def test_the_store_defaults_to_the_environment(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", source)
    out = tmp_path / "env.log"
    assert _run(capsys, "log", "export", "--out", str(out))[0] == 0
    monkeypatch.setenv("NENJIM_STORE_URL", f"sqlite://{tmp_path / 'env.db'}")
    code, printed, _ = _run(capsys, "log", "import", str(out))
    assert code == 0
    assert printed.startswith(f"imported 4 events into sqlite://{tmp_path / 'env.db'}")


def test_out_in_a_missing_directory_writes_nothing(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing" / "out.log"
    code, printed, err = _run(capsys, "log", "export", "--store", source, "--out", str(out))
    assert (code, printed) == (1, "")
    assert err == f"nenjim: error: cannot write {out}: No such file or directory\n"
    assert not out.parent.exists()


def test_a_failed_export_leaves_an_existing_out_file_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.log"
    out.write_text("yesterday's export\n")
    missing = f"sqlite://{tmp_path / 'missing.db'}"
    code, _, err = _run(capsys, "log", "export", "--store", missing, "--out", str(out))
    assert code == 3
    assert "does not exist" in err
    assert out.read_text() == "yesterday's export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.log"]


def test_an_exported_file_has_the_users_permissions(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.log"
    umask = os.umask(0o022)
    try:
        assert _run(capsys, "log", "export", "--store", source, "--out", str(out))[0] == 0
    finally:
        os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o644


def _on_a_terminal(argv: list[str]) -> tuple[int, bytes]:
    """Run ``nenjim argv`` with stderr on a pseudo-terminal; (exit code, what it drew)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*NENJIM, *argv], stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL
    )
    os.close(follower)
    seen = b""
    try:
        while chunk := os.read(leader, 4096):
            seen += chunk
    except OSError:  # Linux reports the closed terminal as EIO
        pass
    os.close(leader)
    return process.wait(timeout=60), seen


def test_export_and_import_draw_a_bar_on_a_terminal(source: str, tmp_path: Path) -> None:
    out = tmp_path / "out.log"
    code, drawn = _on_a_terminal(["log", "export", "--store", source, "--out", str(out)])
    assert code == 0
    assert b"exporting events [" + b"#" * BAR_WIDTH + b"] 4/4" in drawn
    target = f"sqlite://{tmp_path / 'target.db'}"
    code, drawn = _on_a_terminal(["log", "import", "--store", target, str(out)])
    assert code == 0
    assert f"checking {out} [".encode() in drawn
    assert b"importing events [" + b"#" * BAR_WIDTH + b"] 4/4" in drawn
    assert b"auditing events [" in drawn
    assert drawn.endswith(b"\r")  # erased
