"""The real entry points: the ``nenjim`` console script and ``python -m nenjim``."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

CONSOLE_SCRIPT = Path(sys.executable).with_name("nenjim")


def _commands() -> list[list[str]]:
    commands = [[sys.executable, "-m", "nenjim"]]
    if CONSOLE_SCRIPT.exists():
        commands.append([str(CONSOLE_SCRIPT)])
    return commands


@pytest.fixture(params=_commands(), ids=lambda command: Path(command[-1]).name)
def nenjim(request):
    return request.param


def _run(command, *args):
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def test_console_script_is_installed():
    assert CONSOLE_SCRIPT.exists(), f"{CONSOLE_SCRIPT} missing: is the package installed?"


def test_entry_point_digests_a_file(nenjim, tmp_path):
    file = tmp_path / "data"
    data = b"hello\n"
    file.write_bytes(data)

    result = _run(nenjim, "journal", "digest", str(file))

    assert result.returncode == 0
    assert result.stdout == f"sha256:{hashlib.sha256(data).hexdigest()}\n"


def test_entry_point_verifies_a_root(nenjim, sample):
    result = _run(nenjim, "journal", "verify", str(sample.root))

    assert result.returncode == 0, result.stderr
    assert "artifacts: 2, revisions: 3" in result.stdout


def test_entry_point_reports_journal_errors_without_traceback(nenjim, tmp_path):
    result = _run(nenjim, "journal", "verify", str(tmp_path / "missing"))

    assert result.returncode == 1
    assert result.stderr.startswith("nenjim: error: journal root does not exist")
    assert "Traceback" not in result.stderr


def test_entry_point_exits_2_on_usage_errors(nenjim, sample):
    result = _run(nenjim, "journal", "show", str(sample.root), "com.example.widget", "--as-of", "x")

    assert result.returncode == 2
    assert "argument --as-of" in result.stderr
