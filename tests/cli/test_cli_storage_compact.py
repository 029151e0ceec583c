"""``nenjim storage compact``: one line or one JSON object, progress on a terminal, the
documented exit codes, and never a store created.

What compacting removes from the disk is tested in ``tests/storage/test_storage_compact.py``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from nenjim.cli import main
from nenjim.cli.progress import BAR_WIDTH
from nenjim.cli.storage_commands import human_bytes
from nenjim.infrastructure.persistence import Persistence

NENJIM = [sys.executable, "-m", "nenjim"]
LINE = re.compile(
    r"compact OK: (SQLite database .+|PostgreSQL schema '[a-z0-9_]+'): "
    r"\d+(\.\d+)? [kMGT]?B -> \d+(\.\d+)? [kMGT]?B\n"
)


@pytest.fixture
def store(nenjim_durable_store_url: str) -> str:
    """A store with a few Workflow states written through domain Persistence."""
    persistence = Persistence.open(nenjim_durable_store_url)
    try:
        for name in ("wf-1", "wf-2", "wf-3"):
            persistence.workflow_states.save(
                name, expected_revision=None, snapshot={"fields": {"x": "y" * 500}, "phase": None}
            )
    finally:
        persistence.close()
    return nenjim_durable_store_url


def test_compact_prints_one_line_with_the_sizes_before_and_after(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "compact", "--store", store]) == 0
    captured = capsys.readouterr()
    assert LINE.fullmatch(captured.out), captured.out
    assert captured.err == ""  # stderr is no terminal here: no progress drawn
    assert main(["storage", "audit", "--store", store]) == 0


def test_json_names_the_store_its_sizes_and_each_file_or_table(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "compact", "--store", store, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    parts_key = "files" if store.startswith("sqlite:") else "tables"
    assert set(report) == {"store", "bytes_before", "bytes_after", parts_key}
    parts = report[parts_key]
    assert report["bytes_before"] == sum(part["bytes_before"] for part in parts.values())
    assert report["bytes_after"] == sum(part["bytes_after"] for part in parts.values())
    assert all(set(part) == {"bytes_before", "bytes_after"} for part in parts.values())
    if store.startswith("sqlite:"):
        path = urlsplit(store).path
        assert report["store"] == f"SQLite database {path}"
        assert list(parts) == [path, f"{path}-wal"]
        assert parts[f"{path}-wal"]["bytes_after"] == 0
        assert parts[path]["bytes_after"] == Path(path).stat().st_size
    else:
        schema = parse_qs(urlsplit(store).query)["schema"][0]
        assert report["store"] == f"PostgreSQL schema {schema!r}"
        assert {"storage_events", "storage_records", "nenjim_schema"} <= set(parts)
        assert all(part["bytes_after"] > 0 for part in parts.values())


def _on_a_terminal(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run ``nenjim argv`` with stderr on a pseudo-terminal; (exit code, stdout, terminal)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([*NENJIM, *argv], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    try:
        while chunk := os.read(leader, 4096):
            seen += chunk
    except OSError:  # Linux reports the closed terminal as EIO
        pass
    os.close(leader)
    assert process.stdout is not None
    out = process.stdout.read()
    return process.wait(timeout=120), out, seen


def test_progress_is_drawn_on_a_terminal_one_step_per_table_and_nothing_on_a_pipe(
    store: str,
) -> None:
    code, out, terminal = _on_a_terminal(["storage", "compact", "--store", store])
    assert code == 0
    assert out.startswith(b"compact OK: ")
    if store.startswith("sqlite:"):
        name = Path(urlsplit(store).path).name
        assert f"compacting {name} [{'#' * BAR_WIDTH}] 3/3".encode() in terminal
    else:
        assert re.search(rb"compacting tables \[#{%d}\] (\d+)/\1" % BAR_WIDTH, terminal)
        assert b"compacting tables [" + b"." * BAR_WIDTH + b"] 0/" in terminal
    assert terminal.endswith(b"\r")  # erased: what follows starts on a clean line
    piped = subprocess.run(
        [*NENJIM, "storage", "compact", "--store", store], capture_output=True, check=False
    )
    assert piped.returncode == 0
    assert piped.stderr == b""


def test_a_missing_sqlite_store_is_refused_in_one_line_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.db"
    assert main(["storage", "compact", "--store", f"sqlite://{path}"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"nenjim: error: SQLite store {path} does not exist\n"
    assert main(["storage", "compact", "--store", f"sqlite://{path}", "--json"]) == 3
    error = json.loads(capsys.readouterr().err)
    assert (error["kind"], error["exit_code"]) == ("store", 3)
    assert list(tmp_path.iterdir()) == []


def test_an_sqlite_file_without_storage_is_refused_and_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    content = path.read_bytes()
    assert main(["storage", "compact", "--store", f"sqlite://{path}"]) == 3
    err = capsys.readouterr().err
    assert err == f"nenjim: error: no storage in SQLite database {path}: no storage tables\n"
    assert path.read_bytes() == content


def test_a_missing_postgres_schema_is_refused_in_one_line_and_not_created(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_absent_{uuid.uuid4().hex[:12]}"
    url = urlsplit(postgres_url)._replace(query=f"schema={schema}").geturl()
    assert main(["storage", "compact", "--store", url]) == 3
    err = capsys.readouterr().err
    assert err == f"nenjim: error: no storage in PostgreSQL schema {schema!r}: no storage tables\n"
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None


@pytest.mark.parametrize("url", ["memory:", "mysql://x/y", "sqlite:", "postgresql://h/db?x=1"])
def test_memory_and_malformed_urls_are_usage_errors(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "compact", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: argument --store: ")
    assert err.count("\n") == 1
    if url == "memory:":
        assert "memory: keeps nothing between processes, so it has no log to compact" in err
    assert main(["storage", "compact", "--store", url, "--json"]) == 2
    error = json.loads(capsys.readouterr().err)
    assert (error["kind"], error["exit_code"]) == ("usage", 2)
    assert error["error"].startswith("argument --store: ")


def test_the_store_option_is_required(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NENJIM_STORE_URL")  # the autouse fixture's memory: store
    assert main(["storage", "compact"]) == 2
    assert "--store" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.00 kB"),
        (12_000, "12.0 kB"),
        (99_950, "100 kB"),
        (999_499, "999 kB"),
        (999_500, "1.00 MB"),
        (6_840_000, "6.84 MB"),
        (3 * 10**9, "3.00 GB"),
    ],
)
def test_sizes_are_shown_in_decimal_units_with_three_digits(count: int, shown: str) -> None:
    assert human_bytes(count) == shown
