"""Journal files reach every checkout byte for byte, whatever git's line-ending settings."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nenjim.journal.impl.ref import build_journal

REPOSITORY = Path(__file__).resolve().parents[2]
SUFFIXES = (".journal", ".journal.example")


def _git(*args: str, cwd: Path = REPOSITORY) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=120
    )
    return done.stdout


def _tracked_journal_files() -> list[str]:
    return [name for name in _git("ls-files", "-z").split("\0") if name.endswith(SUFFIXES) and name]


def test_every_tracked_journal_file_is_kept_byte_exact() -> None:
    files = _tracked_journal_files()
    assert len(files) > 40
    lines = _git("check-attr", "text", "eol", "--", *files).splitlines()
    attributes = {line.rsplit(": ", 2)[0] + ": " + line.rsplit(": ", 2)[1]: line for line in lines}
    for name in files:
        assert attributes[f"{name}: text"].endswith(": unset"), name
        assert attributes[f"{name}: eol"].endswith(": unspecified"), name


@pytest.fixture(scope="module")
def crlf_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the committed tree checked out with ``core.autocrlf=true``."""
    clone = tmp_path_factory.mktemp("checkout") / "repo"
    _git("clone", "-q", "-c", "core.autocrlf=true", "--no-hardlinks", str(REPOSITORY), str(clone))
    return clone


def test_a_crlf_checkout_keeps_the_committed_bytes(crlf_clone: Path) -> None:
    assert _git("config", "core.autocrlf", cwd=crlf_clone).strip() == "true"
    committed = _tracked_journal_files()
    for name in committed:
        blob = subprocess.run(
            ["git", "cat-file", "blob", f"HEAD:{name}"],
            cwd=crlf_clone,
            check=True,
            capture_output=True,
            timeout=60,
        ).stdout
        assert (crlf_clone / name).read_bytes() == blob, name


def test_the_sample_root_of_a_crlf_checkout_loads(crlf_clone: Path) -> None:
    assembly = build_journal(crlf_clone / "data" / "sample" / "journals")
    assembly.process.start()
    assert len(assembly.service.coordinates()) > 10


def test_the_example_chains_of_a_crlf_checkout_verify(crlf_clone: Path, tmp_path: Path) -> None:
    examples = crlf_clone / "data" / "nenjim" / "journals"
    root = tmp_path / "root"
    for path in examples.glob("*/*.journal.example"):
        target = root / path.parent.name / path.name.removesuffix(".example")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    assembly = build_journal(root)
    assembly.process.start()
    loaded = sum(len(assembly.service.revisions(c)) for c in assembly.service.coordinates())
    assert loaded == len(list(examples.glob("*/*.journal.example")))
