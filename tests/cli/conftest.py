"""Journal roots written by hand for the ``nenjim journal`` command-line tests."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

WIDGET = "com.example.widget"
CORE = "com.example.core"
CONTENT_100 = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
CONTENT_101 = "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"

WriteRevision = Callable[[Path, str, str, str], Path]


@pytest.fixture(autouse=True)
def in_memory_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most CLI tests need no durable store; tests of the default store unset this."""
    monkeypatch.setenv("NENJIM_STORE_URL", "memory:")


def _write_revision(root: Path, coordinate: str, version: str, text: str) -> Path:
    directory = root / coordinate
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{version}.journal"
    path.write_bytes(text.encode("utf-8"))
    return path


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class SampleJournal:
    """A root with a two-revision widget chain and a one-revision core chain."""

    root: Path
    widget_genesis: Path
    widget_head: Path
    core_genesis: Path

    def digest(self, path: Path) -> str:
        """The digest of a revision file's exact bytes."""
        return _digest(path)


@pytest.fixture
def write_revision() -> WriteRevision:
    """``write(root, coordinate, version, text)`` places a revision file and returns its path."""
    return _write_revision


@pytest.fixture
def sample(tmp_path: Path) -> SampleJournal:
    """A valid Journal root under ``tmp_path / "root"``."""
    root = tmp_path / "root"
    genesis = _write_revision(
        root,
        WIDGET,
        "20260101T000000Z",
        "NENJIM-JOURNAL 1\r\n"
        "# comments and CRLF endings are part of the digest\r\n"
        f"ARTIFACT {WIDGET}\r\n"
        "JOURNAL_VERSION 20260101T000000Z\r\n"
        'DESCRIPTION "Widgets for \\"everyone\\""\r\n'
        "INFORMATION https://widgets.example.com/docs\r\n"
        "\r\n"
        "RELEASE 1.0.0\r\n"
        "  LICENSE Apache-2.0\r\n"
        f"  CONTENT {CONTENT_100}\r\n",
    )
    head = _write_revision(
        root,
        WIDGET,
        "20260201T000000Z",
        "NENJIM-JOURNAL 1\n"
        f"ARTIFACT {WIDGET}\n"
        "JOURNAL_VERSION 20260201T000000Z\n"
        f"PREDECESSOR {_digest(genesis)}\n"
        'DESCRIPTION "Widgets for \\"everyone\\""\n'
        "INFORMATION https://widgets.example.com/docs\n"
        'POLICY deprecated "use gadgets"\n'
        "\n"
        "RELEASE 1.0.0\n"
        "  LICENSE Apache-2.0\n"
        f"  CONTENT {CONTENT_100}\n"
        '  POLICY yanked "broken build, use 1.0.1"\n'
        "\n"
        "RELEASE 1.0.1\n"
        '  DESCRIPTION "Fixes the build"\n'
        "  LICENSE Apache-2.0 OR MIT\n"
        f"  CONTENT {CONTENT_101}\n"
        "  DEPENDENCY com.example.log 0.9.3\n"
        "  DEPENDENCY com.example.core [1.2.0,2.0.0)\n"
        "  PREFER com.example.core 1.4.0\n"
        "  EXCLUDE com.example.zeta\n"
        "  EXCLUDE com.example.legacy\n",
    )
    core = _write_revision(
        root,
        CORE,
        "20250101T000000Z",
        f"NENJIM-JOURNAL 1\nARTIFACT {CORE}\nJOURNAL_VERSION 20250101T000000Z\n",
    )
    return SampleJournal(root, genesis, head, core)
