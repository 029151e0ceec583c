"""Every snippet of README.md and docs/*.md runs as written.

The convention (also in ``docs/README.md``): per document, in order, in one
fresh temporary working directory and without ``$NENJIM_STORE_URL``,

- every ``python`` block runs, all of a document's blocks in one namespace;
- every ``console`` block runs: each ``$ `` line is a command for ``bash``
  with the interpreter's ``bin`` directory (the project's ``.venv/bin``)
  first on ``PATH``, and the lines after it, up to the next ``$ ``, are
  exactly what it prints;
- ``sh`` blocks are illustrative (placeholders such as ROOT) and not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import DOCUMENTS, REPOSITORY, Block, blocks

RUNNABLE = ("python", "console")


def _runnable(document: Path) -> list[Block]:
    return [block for block in blocks(document) if block.info in RUNNABLE]


@pytest.mark.parametrize(
    "document",
    [d for d in DOCUMENTS if _runnable(d)],
    ids=lambda d: str(d.relative_to(REPOSITORY)),
)
def test_the_documents_snippets_run_as_written(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NENJIM_STORE_URL", raising=False)
    namespace: dict[str, object] = {"__name__": "__doc_snippet__"}
    for block in _runnable(document):
        if block.info == "python":
            code = compile(block.text, block.where, "exec", dont_inherit=True)
            exec(code, namespace)
        else:
            _run_console(block, tmp_path)


def _run_console(block: Block, cwd: Path) -> None:
    commands: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"{block.where}: output before the first '$ ' command"
            commands[-1][1].append(line)
    assert commands, f"{block.where}: a console block without a '$ ' command"
    env = dict(os.environ)
    env.pop("NENJIM_STORE_URL", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command, expected in commands:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{block.where}: {command!r} failed: {done.stderr}"
        assert done.stdout.rstrip("\n").splitlines() == expected, f"{block.where}: {command!r}"


def test_the_documents_have_runnable_snippets() -> None:
    """The suite above is not vacuous: the README and the format page have some."""
    names = {d.name for d in DOCUMENTS if _runnable(d)}
    assert {
        "README.md",
        "journal-format.md",
        "log.md",
        "persistence.md",
        "storage.md",
        "testing.md",
    } <= names
