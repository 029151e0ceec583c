"""Reads ``<root>/<coordinate>/<journal-version>.journal`` files; never writes.

The scan is strict: the root holds only artifact directories, an artifact
directory only revision files and examples; hidden names are ignored; a
symbolic link counts only if its target resolves inside the root. Files are
read as exact bytes, so a digest covers CRLF line endings as written.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from domain.journal.document import JournalRevision
from domain.journal.errors import (
    InvalidValueError,
    JournalError,
    JournalLayoutError,
    JournalRootError,
)
from domain.journal.parser import decode_journal_bytes, parse_journal
from domain.journal.values import ArtifactCoordinate, JournalVersion, Sha256Digest

REVISION_SUFFIX = ".journal"
EXAMPLE_SUFFIX = ".journal.example"


@dataclass(frozen=True, slots=True)
class JournalFile:
    """One runtime revision file: where it is, what its placement says, its exact bytes."""

    path: Path
    coordinate: ArtifactCoordinate
    version: JournalVersion
    data: bytes

    @property
    def digest(self) -> Sha256Digest:
        """The digest of the exact file bytes."""
        return Sha256Digest.of_bytes(self.data)

    def parse(self) -> JournalRevision:
        """Parse the file and check that its content matches its placement."""
        artifact = str(self.coordinate)
        try:
            revision = parse_journal(decode_journal_bytes(self.data))
        except JournalError as error:
            error.locate(artifact=artifact, path=self.path)
            raise
        if revision.coordinate != self.coordinate:
            raise JournalLayoutError(
                f"ARTIFACT {revision.coordinate} differs from its directory {self.coordinate}",
                artifact=artifact,
                path=self.path,
            )
        if revision.version != self.version:
            raise JournalLayoutError(
                f"JOURNAL_VERSION {revision.version} differs from its file name {self.path.name}",
                artifact=artifact,
                path=self.path,
            )
        return revision


def scan_root(root: Path) -> list[JournalFile]:
    """Every runtime file under ``root``: artifacts by name, each chronologically.

    Every fault of the tree (a misplaced or misnamed entry, a symbolic link
    that loops, dangles or leaves the root, a directory or file that cannot be
    read) is a :class:`JournalLayoutError` or :class:`JournalRootError` naming
    the path; no ``OSError`` escapes.
    """
    real_root = _check_root(root)
    files: list[JournalFile] = []
    for entry in _entries(root, JournalRootError):
        _, info = _follow(entry, real_root, None)
        if not stat.S_ISDIR(info.st_mode):
            raise JournalLayoutError(
                "unexpected file in the journal root: expected artifact directories only",
                path=entry,
            )
        try:
            coordinate = ArtifactCoordinate(entry.name)
        except InvalidValueError as error:
            raise JournalLayoutError(
                f"directory name is not an artifact coordinate: {error.detail}", path=entry
            ) from None
        files.extend(_artifact_files(entry, coordinate, real_root))
    return files


def _check_root(root: Path) -> Path:
    try:
        info = root.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise JournalRootError("journal root does not exist", path=root) from None
    except OSError as error:
        raise JournalRootError(
            f"cannot access the journal root: {_reason(error)}", path=root
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise JournalRootError("journal root is not a directory", path=root)
    return Path(os.path.realpath(root))


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "symbolic link loop"
    return error.strerror or str(error)


def _entries(directory: Path, unreadable: type[JournalError]) -> list[Path]:
    """Visible names in ``directory``, sorted; hidden names (``.*``) are ignored."""
    try:
        names = sorted(e.name for e in os.scandir(directory))
    except OSError as error:
        raise unreadable(f"cannot read directory: {_reason(error)}", path=directory) from error
    return [directory / name for name in names if not name.startswith(".")]


def _follow(entry: Path, real_root: Path, artifact: str | None) -> tuple[Path, os.stat_result]:
    """``entry`` or the target of a symbolic link (inside the root), and its status."""
    try:
        info = entry.lstat()
        if not stat.S_ISLNK(info.st_mode):
            return entry, info
        # Not strict: a loop or a dangling link is reported below, by name.
        target = Path(os.path.realpath(entry))
        if not target.is_relative_to(real_root):
            raise JournalLayoutError(
                f"symbolic link points outside the journal root (to {target})",
                artifact=artifact,
                path=entry,
            )
        return target, entry.stat()
    except FileNotFoundError as error:
        raise JournalLayoutError(
            f"dangling symbolic link (to {os.path.realpath(entry)})", artifact=artifact, path=entry
        ) from error
    except OSError as error:
        raise JournalLayoutError(
            f"cannot access: {_reason(error)}", artifact=artifact, path=entry
        ) from error


def _artifact_files(
    directory: Path, coordinate: ArtifactCoordinate, real_root: Path
) -> list[JournalFile]:
    artifact = str(coordinate)
    found: list[JournalFile] = []
    for entry in _entries(directory, JournalLayoutError):
        name = entry.name
        if name.endswith(EXAMPLE_SUFFIX):
            continue
        if not name.endswith(REVISION_SUFFIX):
            raise JournalLayoutError(
                "unexpected entry in an artifact directory: expected "
                "<journal-version>.journal files",
                artifact=artifact,
                path=entry,
            )
        try:
            version = JournalVersion(name.removesuffix(REVISION_SUFFIX))
        except InvalidValueError as error:
            raise JournalLayoutError(
                f"file name is not <journal-version>.journal: {error.detail}",
                artifact=artifact,
                path=entry,
            ) from None
        target, info = _follow(entry, real_root, artifact)
        if not stat.S_ISREG(info.st_mode):
            raise JournalLayoutError(
                "not a regular file: expected a Journal revision file",
                artifact=artifact,
                path=entry,
            )
        try:
            data = target.read_bytes()
        except OSError as error:
            raise JournalLayoutError(
                f"cannot read file: {_reason(error)}", artifact=artifact, path=entry
            ) from error
        found.append(JournalFile(entry, coordinate, version, data))
    found.sort(key=lambda f: f.version)
    return found
