"""The built wheel, installed as a user installs it: offline, with exactly what an extra needs.

The wheel is built from this tree and unpacked into a fresh directory (a new
virtualenv's site-packages, or a plain directory), with exactly the
distributions that ``nenjim[EXTRA]`` requires, followed transitively through
their metadata (the ones this environment has, file by file, so that another
distribution sharing a namespace package cannot slip in).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = ["domain", "infrastructure", "journal", "projections", "nenjim"]
"""The folders a build needs: the layers, and nenjim/ whose links name them nenjim.<layer>."""


def build_wheel(directory: Path) -> Path:
    """The wheel built from this tree into ``directory``, offline, as the README says."""
    source = directory / "source"
    source.mkdir()
    for name in [*PACKAGES, "pyproject.toml", "README.md"]:
        if (PROJECT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(PROJECT / name, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy(PROJECT / name, source / name)
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


def requirements(wheel: Path, extra: str) -> list[Requirement]:
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


def closure(requirements: list[Requirement]) -> set[str]:
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


def install(wheel: Path, extra: str, target: Path) -> None:
    """Unpack the wheel into ``target`` and link every file of each distribution it needs."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    for name in sorted(closure(requirements(wheel, extra))):
        installed = distribution(name)
        for file in installed.files or []:
            located = Path(str(installed.locate_file(file)))
            if file.parts[0] == ".." or not located.is_file():
                continue  # scripts and the like, outside site-packages
            link = target / file
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(located)


def isolated_python(target: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
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
