"""The README's install, as a user does it: the built wheel and one extra, nothing else.

The wheel is built from this tree and unpacked into a fresh directory, with
exactly the distributions that ``nenjim[EXTRA]`` requires, followed
transitively through their metadata (the ones this environment has, file by
file, so that another distribution sharing a namespace package cannot slip
in). A fresh interpreter that sees only that directory and the standard
library then runs what the documentation says the extra is for.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import blocks
from wheel_install import PROJECT, build_wheel, install, isolated_python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this tree."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_langgraph_extra_runs_the_documented_example(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    install(wheel, "langgraph", target)
    example = next(b for b in blocks(PROJECT / "docs" / "langgraph.md") if b.info == "python")
    result = isolated_python(target, example.text + "print('example done')\n", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("example done\n")


def test_the_bare_install_has_the_command_line_and_no_langgraph(
    wheel: Path, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    install(wheel, "", target)
    version = isolated_python(
        target,
        "sys.argv = ['nenjim', '--version']\nfrom nenjim.cli import entry\nentry()\n",
        tmp_path,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("nenjim 0.")
    missing = isolated_python(target, "import nenjim.langgraph\n", tmp_path)
    assert "pip install 'nenjim[langgraph]'" in missing.stderr
