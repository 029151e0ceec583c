"""An installed nenjim beside an application that owns the names of nenjim's layer folders.

The checkout keeps its layers in top-level folders (``domain/``,
``infrastructure/``, ``journal/``, ``projections/``); installed, they are
``nenjim.domain`` and so on, so an application with packages of those names
keeps them. The wheel goes into a new virtualenv, the application's own
packages sit in its working directory (first on ``sys.path``), and the
README's example, a Persistence store and the command line run there.
"""

from __future__ import annotations

import subprocess
import venv
import zipfile
from pathlib import Path

import pytest
from doc_blocks import blocks
from wheel_install import PROJECT, build_wheel, install

LAYERS = ("domain", "infrastructure", "journal", "projections")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this tree."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv holding the wheel and what the bare install requires; its python."""
    home = tmp_path_factory.mktemp("venv")
    venv.create(home, with_pip=False, symlinks=True)
    (site,) = home.glob("lib/python*/site-packages")
    install(wheel, "", site)
    return home / "bin" / "python"


@pytest.fixture
def application(tmp_path: Path) -> Path:
    """An application's directory with packages named like nenjim's layer folders."""
    for layer in LAYERS:
        package = tmp_path / layer
        package.mkdir()
        (package / "__init__.py").write_text(f"OWNER = 'the application'\nNAME = {layer!r}\n")
        (package / "persistence.py").write_text("OWNER = 'the application'\n")
    return tmp_path


def _run(python: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *argv], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def test_the_wheel_installs_only_the_nenjim_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"nenjim"}
    assert not set(LAYERS) & tops


def test_the_readme_example_runs_beside_the_application(
    environment: Path, application: Path
) -> None:
    (example,) = [b for b in blocks(PROJECT / "README.md") if b.info == "python"]
    check = "".join(
        f"import {layer}\nassert {layer}.OWNER == 'the application'\n" for layer in LAYERS
    )
    script = application / "example.py"
    script.write_text(example.text + check + "print('example done')\n")
    done = _run(environment, application, str(script))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("example done\n")


def test_persistence_opens_beside_an_application_domain(
    environment: Path, application: Path
) -> None:
    code = (
        "import domain.persistence\n"
        "from nenjim.infrastructure.persistence import Persistence\n"
        "p = Persistence.open('sqlite:store.db')\n"
        "p.close()\n"
        "assert domain.persistence.OWNER == 'the application'\n"
        "print('opened')\n"
    )
    done = _run(environment, application, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "opened\n"


def test_the_command_line_runs_beside_the_application(environment: Path, application: Path) -> None:
    sample = PROJECT / "data" / "sample" / "journals"
    done = _run(environment, application, "-m", "nenjim", "journal", "verify", str(sample))
    assert done.returncode == 0, done.stderr
    assert "artifacts" in done.stdout
