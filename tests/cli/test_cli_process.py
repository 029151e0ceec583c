"""``nenjim`` as a shell runs it: an early Ctrl-C, a reader that leaves, a missing extra.

Each test runs the real console script (or ``python -m nenjim``) in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.sample_roots import generate_root
from nenjim.cli import main

CONSOLE_SCRIPT = Path(sys.executable).with_name("nenjim")
NENJIM_LOADED = re.compile(r"^import time:.*\|\s+nenjim$")


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root whose ``verify`` prints well over a pipe's 64 KiB and loads for a while."""
    root = tmp_path_factory.mktemp("big") / "root"
    generate_root(root, artifacts=1000, revisions=2)
    return root


def _without_store() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NENJIM_STORE_URL", None)
    return env


LAUNCHERS = {"console script": [str(CONSOLE_SCRIPT)], "python -m": [sys.executable, "-m", "nenjim"]}


@pytest.mark.parametrize("launcher", LAUNCHERS.values(), ids=LAUNCHERS.keys())
@pytest.mark.parametrize("delay", [0.03, 0.05, 0.1, 0.2, 0.4])
def test_a_ctrl_c_from_the_start_is_one_line_and_exit_130(
    big_root: Path, launcher: list[str], delay: float
) -> None:
    # The clock starts once the interpreter has imported the (empty) nenjim package:
    # Python reports each import it finished on stderr. A Ctrl-C before that is the
    # interpreter's own start-up and its finding of the package, which no line of nenjim
    # can handle (on a loaded machine that alone can take tens of milliseconds); from
    # there to nenjim's handler is one module importing a few of the standard library's,
    # a millisecond: every delay here is well past it, and the commands' imports take
    # far longer.
    env = _without_store() | {"PYTHONPROFILEIMPORTTIME": "1"}
    process = subprocess.Popen(
        [*launcher, "journal", "verify", str(big_root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stderr is not None
    said: list[str] = []
    for raw in process.stderr:
        said.append(raw.decode())
        if NENJIM_LOADED.match(said[-1].rstrip("\n")):
            break
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    out, rest = process.communicate(timeout=120)
    lines = [*said, *rest.decode().splitlines(keepends=True)]
    errors = [line for line in lines if not line.startswith("import time:")]
    assert "".join(errors) == "nenjim: error: interrupted\n"
    assert process.returncode == 130
    assert out == b""


def test_an_interrupt_raised_in_code_run_from_a_string_still_exits_130(tmp_path: Path) -> None:
    # Seen for real under `python -m nenjim`: a Ctrl-C landing while dataclasses built a
    # class (they exec strings) ended the process by SIGINT after the one-line report.
    launcher = tmp_path / "interrupted_launcher"
    launcher.mkdir()
    (launcher / "__main__.py").write_text(
        "import sys\n"
        "from nenjim import cli\nfrom nenjim.cli import journal_commands as cli_commands\n"
        "def digest(args):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "cli_commands.digest = digest\n"
        "sys.argv = ['nenjim', 'journal', 'digest', 'any-file']\n"
        "cli.entry()\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "interrupted_launcher"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.stderr == "nenjim: error: interrupted\n"
    assert result.returncode == 130


def test_the_entry_module_imports_none_of_the_commands() -> None:
    # What it imports runs before the Ctrl-C handler is in place.
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import nenjim.cli\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert set(eval(result.stdout)) <= {"nenjim", "nenjim.cli", "signal"}


@pytest.mark.parametrize("attempt", range(3))
def test_a_reader_that_leaves_early_ends_with_141(big_root: Path, attempt: int) -> None:
    # `nenjim journal verify ROOT | head -1`: more than a pipe holds is printed, so the
    # reader leaves while nenjim still writes; it must say nothing and end with 141.
    process = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "journal", "verify", str(big_root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_without_store(),
    )
    assert process.stdout is not None
    assert process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    assert first.startswith(b"journal OK: ")
    assert process.wait(timeout=120) == 141
    assert process.stderr.read() == b""


def test_the_whole_output_reaches_a_reader_that_stays(
    big_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "journal", "verify", str(big_root)],
        capture_output=True,
        env=_without_store(),
        check=False,
    )
    assert result.returncode == 0
    assert len(result.stdout) > 65536  # more than a pipe holds at once
    monkeypatch.delenv("NENJIM_STORE_URL", raising=False)
    assert main(["journal", "verify", str(big_root)]) == 0
    assert result.stdout.decode() == capsys.readouterr().out


_HIDE = """
import sys
HIDDEN = sys.argv[1].split(",")
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
sys.argv = ["nenjim", *sys.argv[2:]]
from nenjim.cli import entry
entry()
"""


@pytest.mark.parametrize(
    ("hidden", "argv", "says"),
    [
        ("starlette,uvicorn", ["serve", "--key", "{key}", "--store", "{store}"], "[serve]"),
        ("httpx", ["journal", "verify-log", "http://127.0.0.1:9/", "--key", "{key}"], "[serve]"),
        (
            "psycopg,psycopg_pool,psycopg_binary",
            ["journal", "audit", "--store", "postgresql://postgres@127.0.0.1/postgres"],
            "[postgres]",
        ),
        (
            "psycopg,psycopg_pool,psycopg_binary",
            ["storage", "audit", "--store", "postgresql://postgres@127.0.0.1/postgres"],
            "[postgres]",
        ),
        (
            "psycopg,psycopg_pool,psycopg_binary",
            ["journal", "verify", "{root}", "--store", "postgresql://postgres@127.0.0.1/x"],
            "[postgres]",
        ),
    ],
    ids=["serve", "verify-log", "journal audit", "storage audit", "journal verify"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_missing_extra_is_one_line_and_exit_3_for_every_command(
    hidden: str, argv: list[str], says: str, *, as_json: bool, sample: object, tmp_path: Path
) -> None:
    key = tmp_path / "log.key"
    made = subprocess.run(
        [str(CONSOLE_SCRIPT), "keys", "new", "log", "--out", str(key)],
        capture_output=True,
        check=False,
    )
    assert made.returncode == 0
    store = f"sqlite:///{tmp_path / 'journal.db'}"
    filled = [
        a.format(key=key, store=store, root=sample.root)  # type: ignore[attr-defined]
        for a in argv
    ]
    result = subprocess.run(
        [sys.executable, "-c", _HIDE, hidden, *filled, *(["--json"] if as_json else [])],
        capture_output=True,
        text=True,
        env=_without_store(),
        check=False,
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    if as_json:
        reported = json.loads(result.stderr)
        assert (reported["kind"], reported["exit_code"]) == ("extra", 3)
        message = reported["error"]
    else:
        assert result.stderr.startswith("nenjim: error: ")
        message = result.stderr
    assert f"pip install 'nenjim{says}'" in message
