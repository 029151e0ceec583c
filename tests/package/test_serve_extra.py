"""The ``serve`` extra: ``nenjim serve`` and ``journal verify-log`` need it, nothing else does."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def test_the_extra_pins_lower_bounds() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["serve"] == [
        "starlette>=0.37",
        "uvicorn>=0.29",
        "httptools>=0.6",
        "uvloop>=0.19; sys_platform != 'win32'",
        "httpx>=0.27",
        "prometheus-client>=0.20",
    ]
    assert not any(
        name in requirement
        for requirement in project["dependencies"]
        for name in ("starlette", "uvicorn", "httptools", "uvloop", "httpx", "prometheus")
    )


def test_without_the_extra_the_commands_say_how_to_get_it(tmp_path: Path) -> None:
    code = """
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("starlette", "uvicorn", "httpx", "prometheus_client"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
from nenjim.cli import main
key = sys.argv[1]
assert main(["keys", "new", "log", "--out", key]) == 0
assert main(["serve", "--store", "memory:", "--key", key]) == 3
assert main(["journal", "verify-log", "http://127.0.0.1:1", "--key", key]) == 3
assert main(["serve", "--store", "memory:", "--key", key, "--json"]) == 3
"""
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "log.key")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    errors = result.stderr.splitlines()
    assert len(errors) == 3
    for line in errors[:2]:
        assert line.startswith(
            "nenjim: error: this command needs the serve extra: pip install 'nenjim[serve]'"
        )
    reported = json.loads(errors[2])
    assert (reported["kind"], reported["exit_code"]) == ("extra", 3)
