"""The progress bar: drawn on a terminal's stderr, silent when stderr is a pipe."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from nenjim.cli.progress import BAR_WIDTH, TerminalProgress, progress_for

NENJIM = [sys.executable, "-m", "nenjim"]


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
    return process.wait(timeout=60), out, seen


def test_a_load_and_an_audit_draw_a_bar_on_a_terminal(sample: Any, tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'log.db'}"
    code, out, terminal = _on_a_terminal(["journal", "verify", str(sample.root), "--store", store])
    assert code == 0
    assert b"artifacts: 2, revisions: 3" in out
    assert b"reading revision files [" + b"#" * BAR_WIDTH + b"] 3/3" in terminal
    assert terminal.endswith(b"\r")  # erased: what follows starts on a clean line
    code, out, terminal = _on_a_terminal(["journal", "audit", "--store", store])
    assert code == 0
    assert b"auditing events [" + b"#" * BAR_WIDTH + b"] 3/3" in terminal


def test_nothing_is_drawn_when_stderr_is_a_pipe(sample: Any, tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'log.db'}"
    for argv in (
        ["journal", "verify", str(sample.root), "--store", store],
        ["journal", "audit", "--store", store],
    ):
        result = subprocess.run([*NENJIM, *argv], capture_output=True, check=False)
        assert result.returncode == 0
        assert result.stderr == b""


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_is_throttled_shows_the_final_count_and_is_erased() -> None:
    stream = io.StringIO()
    clock = _Clock()
    progress = TerminalProgress(stream, interval=0.5, clock=clock)
    progress("loading", 0, 4)
    progress("loading", 1, 4)  # too soon: not drawn
    clock.now = 0.6
    progress("loading", 2, 4)
    progress("loading", 4, 4)  # the last is always drawn, then erased
    frames = stream.getvalue().split("\r")
    assert frames[1:] == [
        "loading [" + "." * BAR_WIDTH + "] 0/4",
        "loading [" + "#" * (BAR_WIDTH // 2) + "." * (BAR_WIDTH // 2) + "] 2/4",
        "loading [" + "#" * BAR_WIDTH + "] 4/4",
        " " * len(frames[-2]),
        "",
    ]


def test_only_a_terminal_gets_a_bar() -> None:
    assert progress_for(io.StringIO()) is None
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        assert isinstance(progress_for(terminal), TerminalProgress)
    os.close(leader)
