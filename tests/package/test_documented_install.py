"""The README's install, as a user does it: the built wheel and one extra, nothing else.

The wheel is built from this tree and unpacked into a fresh directory, with
exactly the distributions that ``nenjim[EXTRA]`` requires, followed
transitively through their metadata (the ones this environment has, file by
file, so that another distribution sharing a namespace package cannot slip
in). A fresh interpreter that sees only that directory and the standard
library then runs what the documentation says the extra is for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from doc_blocks import blocks
from packaging.requirements import Requirement

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = ["domain", "infrastructure", "journal", "projections", "nenjim"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this tree, offline, as the README says to build it."""
    directory = tmp_path_factory.mktemp("wheel")
    source = directory / "source"
    source.mkdir()
    for name in [*PACKAGES, "pyproject.toml", "README.md"]:
        copy = shutil.copytree if (PROJECT / name).is_dir() else shutil.copy
        copy(PROJECT / name, source / name)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
            *("-w", str(directory / "dist"), str(source)),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = (directory / "dist").glob("nenjim-*.whl")
    return built


def _requirements(wheel: Path, extra: str) -> list[Requirement]:
    """The wheel's requirements for ``nenjim[extra]``."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    wanted = [
        Requirement(line.removeprefix("Requires-Dist: "))
        for line in lines
        if line.startswith("Requires-Dist: ")
    ]
    return [r for r in wanted if r.marker is None or r.marker.evaluate({"extra": extra})]


def _closure(requirements: list[Requirement]) -> set[str]:
    """Every distribution ``requirements`` need, transitively (by their installed metadata)."""
    found: set[str] = set()
    pending = list(requirements)
    while pending:
        requirement = pending.pop()
        try:
            installed = distribution(requirement.name)
        except PackageNotFoundError:
            raise AssertionError(f"{requirement} is not installed in this environment") from None
        name = installed.metadata["Name"].lower()
        if name in found:
            continue
        found.add(name)
        extras = requirement.extras or {""}
        for text in installed.requires or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    return found


def _install(wheel: Path, extra: str, target: Path) -> None:
    """Unpack the wheel into ``target`` and link every file of each distribution it needs."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    for name in sorted(_closure(_requirements(wheel, extra))):
        installed = distribution(name)
        for file in installed.files or []:
            located = Path(str(installed.locate_file(file)))
            if file.parts[0] == ".." or not located.is_file():
                continue  # scripts and the like, outside site-packages
            link = target / file
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(located)


def _python(target: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in an interpreter that sees only ``target`` and the standard library."""
    isolated = f"import sys\nsys.path.insert(0, {str(target)!r})\n{code}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "NENJIM"))}
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", isolated],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=300,
    )


def test_the_langgraph_extra_runs_the_documented_example(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    _install(wheel, "langgraph", target)
    example = next(b for b in blocks(PROJECT / "docs" / "langgraph.md") if b.info == "python")
    result = _python(target, example.text + "print('example done')\n", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("example done\n")


def test_the_bare_install_has_the_command_line_and_no_langgraph(
    wheel: Path, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    _install(wheel, "", target)
    version = _python(
        target,
        "sys.argv = ['nenjim', '--version']\nfrom nenjim.cli import entry\nentry()\n",
        tmp_path,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("nenjim 0.")
    missing = _python(target, "import nenjim.langgraph\n", tmp_path)
    assert "pip install 'nenjim[langgraph]'" in missing.stderr
