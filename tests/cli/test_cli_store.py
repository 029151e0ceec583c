"""``--store``, ``$NENJIM_STORE_URL`` and the default SQLite store under ``var/``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nenjim.cli import main


def test_default_store_is_a_per_root_sqlite_file_under_var(
    sample: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("NENJIM_STORE_URL")
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    assert main(["journal", "verify", str(sample.root)]) == 0
    stores = list((workdir / "var").glob("journal-*.db"))
    assert len(stores) == 1
    with sqlite3.connect(stores[0]) as conn:
        assert conn.execute("SELECT COUNT(*) FROM journal_events").fetchone()[0] == 3
    # History survives the files: the log keeps what was accepted.
    for path in sample.root.rglob("*.journal"):
        path.unlink()
    capsys.readouterr()
    assert main(["journal", "log", str(sample.root), "com.example.widget"]) == 0
    assert "2 revisions" in capsys.readouterr().out


def test_store_option_wins_over_the_environment(
    sample: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = tmp_path / "chosen.db"
    monkeypatch.setenv("NENJIM_STORE_URL", f"sqlite://{tmp_path / 'ignored.db'}")
    assert main(["journal", "verify", str(sample.root), "--store", f"sqlite://{chosen}"]) == 0
    assert chosen.exists()
    assert not (tmp_path / "ignored.db").exists()


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
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: store:")
    assert "schema version 0" in err
    assert err.count("\n") == 1
