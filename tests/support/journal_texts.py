"""Builds Journal texts and roots for tests: explicit text, real digests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nenjim.domain.journal.values import Sha256Digest


@dataclass(frozen=True)
class Rel:
    """A release block for :func:`journal_text`."""

    version: str
    content: str = "sha256:" + "1" * 64
    license: str = "MIT"
    extra: tuple[str, ...] = field(default=())


def journal_text(
    artifact: str,
    version: str,
    *,
    predecessor: str | None = None,
    releases: tuple[Rel, ...] = (),
    header: tuple[str, ...] = (),
    newline: str = "\n",
) -> str:
    """A Journal text with the given header and release blocks."""
    lines = ["NENJIM-JOURNAL 1", f"ARTIFACT {artifact}", f"JOURNAL_VERSION {version}"]
    if predecessor is not None:
        lines.append(f"PREDECESSOR {predecessor}")
    lines.extend(header)
    for release in releases:
        lines += [
            "",
            f"RELEASE {release.version}",
            f"  LICENSE {release.license}",
            f"  CONTENT {release.content}",
            *(f"  {line}" for line in release.extra),
        ]
    return newline.join(lines) + newline


def digest(text: str) -> str:
    """The ``sha256:`` digest of a text's UTF-8 bytes."""
    return str(Sha256Digest.of_text(text))


def content(n: int) -> str:
    """A distinct, valid CONTENT digest per number."""
    return str(Sha256Digest.of_text(f"content {n}"))


class Chain:
    """Builds a linear chain of texts for one artifact with real predecessor digests."""

    def __init__(self, artifact: str) -> None:
        self.artifact = artifact
        self.texts: list[str] = []
        self.versions: list[str] = []

    def add(self, version: str, releases: tuple[Rel, ...] = (), **kwargs: object) -> str:
        """Append the next revision (genesis first) and return its text."""
        predecessor = digest(self.texts[-1]) if self.texts else None
        text = journal_text(
            self.artifact,
            version,
            predecessor=predecessor,
            releases=releases,
            **kwargs,  # type: ignore[arg-type]
        )
        self.texts.append(text)
        self.versions.append(version)
        return text


def write_revision(root: Path, artifact: str, version: str, text: str | bytes) -> Path:
    """Write one runtime revision file under ``root`` and return its path."""
    directory = root / artifact
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{version}.journal"
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(data)
    return path


def write_chain(root: Path, chain: Chain) -> list[Path]:
    """Write every revision of ``chain`` under ``root``."""
    return [
        write_revision(root, chain.artifact, version, text)
        for version, text in zip(chain.versions, chain.texts, strict=True)
    ]
