"""``nenjim journal monitor`` follows a served log, fetching only what is new.

Real ``nenjim serve`` processes serve SQLite stores; the monitor keeps its
state in a directory. The requests a round makes are counted by the client
(``requests`` and ``fetched_tiles`` of ``--json``) and by the server
(``nenjim_http_requests_total`` at ``/metrics``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.served_log import free_port, served_log
from nenjim.cli import main
from nenjim.domain.transparency import SignerKey, tiles_for_size


def _add_revisions(root: Path, store: str, names: range, prefix: str = "a") -> None:
    for n in names:
        artifact = root / f"org.example.{prefix}{n}"
        artifact.mkdir(parents=True)
        (artifact / "20260101T000000Z.journal").write_text(
            f"NENJIM-JOURNAL 1\nARTIFACT org.example.{prefix}{n}\n"
            "JOURNAL_VERSION 20260101T000000Z\n"
        )
    assert main(["journal", "verify", str(root), "--store", store, "--json"]) == 0


def _keys(directory: Path) -> tuple[Path, Path]:
    signer = SignerKey.generate("example.com/log")
    key = directory / "log.key"
    key.write_text(signer.encode() + "\n")
    key.chmod(0o600)
    verifier = directory / "log.vkey"
    verifier.write_text(signer.verifier.encode() + "\n")
    return key, verifier


def _monitor(
    url: str, verifier: Path, state: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(
        ["journal", "monitor", url, "--key", str(verifier), "--state", str(state), "--json", *extra]
    )
    captured = capsys.readouterr()
    document = json.loads(captured.out if code == 0 else captured.err)
    if code != 0:
        assert captured.out == ""
    return code, document


def _served(url: str, route: str) -> int:
    """The requests of ``route`` that ``nenjim serve`` answered so far, from its /metrics."""
    total = 0.0
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(f'nenjim_http_requests_total{{route="{route}"'):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


TILES = "/tile/{path:path}"
"""The route of tiles and entry bundles."""


def _state_files(state: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(state)): path.read_bytes()
        for path in sorted(state.rglob("*"))
        if path.is_file()
    }


def test_first_run_no_change_and_growth_fetch_only_what_is_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, store = tmp_path / "root", f"sqlite:///{tmp_path / 'journal.db'}"
    _add_revisions(root, store, range(600))
    key, verifier = _keys(tmp_path)
    state = tmp_path / "state" / "monitor"
    with served_log(store, key) as url:
        code, first = _monitor(url, verifier, state, capsys)
        assert code == 0
        full = len(tiles_for_size(600))
        assert first == {
            "ok": True,
            "size": 600,
            "previous_size": None,
            "new_entries": 600,
            "fetched_tiles": full,
            "fetched_bundles": 3,
            "requests": 1 + 3 + full,
        }
        assert (state / "checkpoint").read_text().startswith("example.com/log\n600\n")
        tiles_before = _served(url, TILES)
        assert tiles_before == 3 + full
        checkpoints_before = _served(url, "/checkpoint")

        code, again = _monitor(url, verifier, state, capsys)
        assert code == 0
        assert again["requests"] == 1  # the checkpoint only
        assert (again["fetched_tiles"], again["new_entries"], again["previous_size"]) == (0, 0, 600)
        assert _served(url, TILES) == tiles_before
        assert _served(url, "/checkpoint") == checkpoints_before + 1

        _add_revisions(root, store, range(600, 605))
        code, grown = _monitor(url, verifier, state, capsys)
        assert code == 0
        assert (grown["size"], grown["previous_size"], grown["new_entries"]) == (605, 600, 5)
        # tile/0/002.p/93 -> .p/88 only (tile/1/000.p/2 did not change); one bundle.
        assert grown["fetched_tiles"] == 1 < full
        assert grown["requests"] == 1 + 1 + 1
        assert _served(url, TILES) == tiles_before + 2  # the tile and its entry bundle

        _add_revisions(root, store, range(605, 800))
        capsys.readouterr()
        assert main(["journal", "monitor", url, "--key", str(verifier), "--state", str(state)]) == 0
        assert capsys.readouterr().out == (
            f"monitor OK: {url}: size 800 (was 605), 195 new entries checked\n"
        )
    # Only the tiles of the latest tree are kept: the replaced partial tiles are gone.
    kept = {name for name in _state_files(state) if name.startswith("tile/")}
    assert kept == {tile.path for tile in tiles_for_size(800)}


def test_an_outage_is_exit_3_and_leaves_the_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, store = tmp_path / "root", f"sqlite:///{tmp_path / 'journal.db'}"
    _add_revisions(root, store, range(3))
    key, verifier = _keys(tmp_path)
    state = tmp_path / "state"
    with served_log(store, key) as url:
        assert _monitor(url, verifier, state, capsys)[0] == 0
    before = _state_files(state)
    code, document = _monitor(url, verifier, state, capsys)
    assert (code, document["kind"], document["exit_code"]) == (3, "unavailable", 3)
    assert document["error"].startswith("monitor could not read the log: cannot fetch ")
    argv = ["journal", "monitor", url, "--key", str(verifier), "--state", str(state)]
    capsys.readouterr()
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: monitor could not read the log: ")
    assert err.count("\n") == 1
    assert _state_files(state) == before


def _two_logs(tmp_path: Path, sizes: tuple[int, int]) -> tuple[str, str, Path, Path]:
    """Two stores of different roots (the second's first revision differs), one signer key."""
    first, second = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _add_revisions(tmp_path / "root-a", first, range(sizes[0]))
    _add_revisions(tmp_path / "root-b", second, range(sizes[1]), prefix="b")
    key, verifier = _keys(tmp_path)
    return first, second, key, verifier


@pytest.mark.parametrize(
    ("sizes", "kind"),
    [((300, 310), "forked"), ((300, 300), "forked"), ((300, 200), "rewritten")],
    ids=["a-larger-fork", "the-same-size-another-root", "a-smaller-log"],
)
def test_another_tree_at_the_same_url_is_exit_1(
    sizes: tuple[int, int], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, key, verifier = _two_logs(tmp_path, sizes)
    state, port = tmp_path / "state", free_port()
    with served_log(first, key, port) as url:
        assert _monitor(url, verifier, state, capsys)[0] == 0
    before = _state_files(state)
    with served_log(second, key, port) as same_url:
        assert same_url == url
        code, document = _monitor(url, verifier, state, capsys)
        assert (code, document["kind"], document["exit_code"]) == (1, kind, 1)
        assert document["error"].startswith("monitor failed: ")
        # The evidence baseline stays: the fork is reported again, run after run.
        assert _monitor(url, verifier, state, capsys)[1]["kind"] == kind
    assert _state_files(state) == before


def test_a_checkpoint_of_another_key_is_bad_signature_and_a_foreign_state_is_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, store = tmp_path / "root", f"sqlite:///{tmp_path / 'journal.db'}"
    _add_revisions(root, store, range(3))
    key, verifier = _keys(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _other_key, other_verifier = _keys(other)
    state = tmp_path / "state"
    with served_log(store, key) as url:
        assert _monitor(url, verifier, state, capsys)[0] == 0
        before = _state_files(state)
        # The state was written with this key; another key cannot open it.
        code, document = _monitor(url, other_verifier, state, capsys)
        assert (code, document["kind"]) == (2, "usage")
        assert document["error"].startswith("monitor: ")
        # A fresh state with the other key: the served checkpoint is not its signature.
        code, document = _monitor(url, other_verifier, tmp_path / "fresh", capsys)
        assert (code, document["kind"]) == (1, "bad-signature")
        assert not (tmp_path / "fresh" / "checkpoint").exists()
        # A directory that is not a monitor's state.
        stranger = tmp_path / "stranger"
        stranger.mkdir()
        (stranger / "notes.txt").write_text("mine\n")
        argv = ["journal", "monitor", url, "--key", str(verifier), "--state", str(stranger)]
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "not a monitor's state directory" in err
        assert _state_files(state) == before
        # A damaged state: a stored tile changed.
        damaged = state / tiles_for_size(3)[0].path
        damaged.write_bytes(bytes(len(damaged.read_bytes())))
        code, document = _monitor(url, verifier, state, capsys)
        assert (code, document["kind"]) == (2, "usage")
        assert "damaged" in document["error"]


def test_a_state_of_another_origin_is_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, store = tmp_path / "root", f"sqlite:///{tmp_path / 'journal.db'}"
    _add_revisions(root, store, range(3))
    key, verifier = _keys(tmp_path)
    state = tmp_path / "state"
    with served_log(store, key) as url:
        assert _monitor(url, verifier, state, capsys)[0] == 0
    # Same key, another origin line: a checkpoint of another log.
    text = (state / "checkpoint").read_text()
    assert (
        main(
            [
                "journal",
                "checkpoint",
                "--store",
                store,
                "--key",
                str(key),
                "--origin",
                "example.com/other",
            ]
        )
        == 0
    )
    other = capsys.readouterr().out
    assert other.startswith("example.com/other\n")
    assert text.startswith("example.com/log\n")
    (state / "checkpoint").write_text(other)
    with served_log(store, key) as url:
        code, document = _monitor(url, verifier, state, capsys)
    assert (code, document["kind"]) == (2, "usage")
    assert "example.com/other" in document["error"]


def test_watch_prints_a_line_per_round_and_ctrl_c_is_130(tmp_path: Path) -> None:
    root, store = tmp_path / "root", f"sqlite:///{tmp_path / 'journal.db'}"
    _add_revisions(root, store, range(3))
    key, verifier = _keys(tmp_path)
    state = tmp_path / "state"
    with served_log(store, key) as url:
        command = [
            sys.executable,
            "-m",
            "nenjim",
            "journal",
            "monitor",
            url,
            "--key",
            str(verifier),
            "--state",
            str(state),
            "--watch",
            "0.2",
        ]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=30)
    assert lines == [
        f"monitor OK: {url}: size 3 (was none), 3 new entries checked\n",
        f"monitor OK: {url}: size 3 (was 3), 0 new entries checked\n",
    ]
    assert process.returncode == 130
    assert err.strip().endswith("interrupted")


def test_watch_reports_an_outage_and_goes_on_a_fork_stops_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, key, verifier = _two_logs(tmp_path, (3, 4))
    state, port = tmp_path / "state", free_port()
    with served_log(first, key, port) as url:
        assert _monitor(url, verifier, state, capsys)[0] == 0
    command = [
        sys.executable,
        "-m",
        "nenjim",
        "journal",
        "monitor",
        url,
        "--key",
        str(verifier),
        "--state",
        str(state),
        "--watch",
        "0.2",
        "--json",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    outage = json.loads(process.stdout.readline())
    assert (outage["ok"], outage["kind"]) == (False, "unavailable")
    with served_log(second, key, port):
        out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert json.loads(err)["kind"] == "forked"
    assert all(json.loads(line)["kind"] == "unavailable" for line in out.splitlines())
