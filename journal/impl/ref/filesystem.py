"""Reads ``<root>/<coordinate>/<journal-version>.journal`` files; never writes.

The scan is strict: the root holds only artifact directories, an artifact
directory only revision files and examples; hidden names are ignored; a
symbolic link counts only if its target resolves inside the root. Files are
read as exact bytes, so a digest covers CRLF line endings as written.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from pathlib import Path
from typing import NamedTuple

from nenjim.domain.journal.document import JournalRevision
from nenjim.domain.journal.errors import (
    InvalidValueError,
    JournalError,
    JournalLayoutError,
    JournalRootError,
)
from nenjim.domain.journal.parser import decode_journal_bytes, parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, JournalVersion, version_reader

REVISION_SUFFIX = ".journal"
EXAMPLE_SUFFIX = ".journal.example"
_READ_SIZE = 1 << 16
_NAME = operator.attrgetter("name")
_revision_version = version_reader(REVISION_SUFFIX)
_tuple_new = tuple.__new__


class JournalFile(NamedTuple):
    """One runtime revision file: where it is, what its placement says, its exact bytes.

    A named tuple: a restart builds one per file, and a tuple is built in C.
    """

    directory: str
    name: str
    coordinate: ArtifactCoordinate
    version_key: str
    """The Journal version its name gives, as text (checked by the scan)."""
    data: bytes

    @property
    def version(self) -> JournalVersion:
        """The Journal version its name gives (built when asked: a restart compares
        10,000s of them as text)."""
        return JournalVersion(self.version_key)

    @property
    def path(self) -> Path:
        """The file's path under the root (a symbolic link is named, not its target)."""
        return Path(self.directory, self.name)

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
        if str(revision.version) != self.version_key:
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
    real_root = check_root(root)
    files: list[JournalFile] = []
    # Directories as text: a Path each would cost more than listing the directory.
    prefix = os.path.join(root, "")
    for entry in _entries(root, JournalRootError):
        path = prefix + entry.name
        if not _is_kind(entry, root, real_root, None, "directory"):
            raise JournalLayoutError(
                "unexpected file in the journal root: expected artifact directories only",
                path=path,
            )
        try:
            coordinate = ArtifactCoordinate(entry.name)
        except InvalidValueError as error:
            raise JournalLayoutError(
                f"directory name is not an artifact coordinate: {error.detail}", path=path
            ) from None
        files.extend(_artifact_files(path, coordinate, real_root))
    return files


def check_root(root: Path) -> Path:
    """The resolved path of ``root``; ``JournalRootError`` unless it is a directory."""
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


def _entries(directory: Path | str, unreadable: type[JournalError]) -> list[os.DirEntry[str]]:
    """Visible entries of ``directory``, by name; hidden names (``.*``) are ignored.

    Entries, not paths: their type usually comes with the listing, so a warm
    restart examines 10,000 files without a ``stat`` or a ``Path`` each.
    """
    try:
        with os.scandir(directory) as listing:
            visible = [e for e in listing if not e.name.startswith(".")]
    except OSError as error:
        raise unreadable(f"cannot read directory: {_reason(error)}", path=directory) from error
    visible.sort(key=_NAME)
    return visible


def _is_kind(
    entry: os.DirEntry[str],
    directory: Path | str,
    real_root: Path,
    artifact: str | None,
    kind: str,
) -> bool:
    """Whether ``entry`` of ``directory`` (or, for a symbolic link, its target inside the
    root) is a ``"file"`` or a ``"directory"``."""
    try:
        if not entry.is_symlink():
            # From the listing's own type when the file system gives one: no stat.
            if kind == "file":
                return entry.is_file(follow_symlinks=False)
            return entry.is_dir(follow_symlinks=False)
    except OSError as error:
        raise JournalLayoutError(
            f"cannot access: {_reason(error)}", artifact=artifact, path=Path(directory, entry.name)
        ) from error
    mode = _follow_link(Path(directory, entry.name), real_root, artifact).st_mode
    return stat.S_ISREG(mode) if kind == "file" else stat.S_ISDIR(mode)


def _follow_link(link: Path, real_root: Path, artifact: str | None) -> os.stat_result:
    """The status of the target of the symbolic link ``link``, which must lie inside the root."""
    try:
        # Not strict: a loop or a dangling link is reported below, by name.
        target = Path(os.path.realpath(link))
        if not target.is_relative_to(real_root):
            raise JournalLayoutError(
                f"symbolic link points outside the journal root (to {target})",
                artifact=artifact,
                path=link,
            )
        return link.stat()
    except FileNotFoundError as error:
        raise JournalLayoutError(
            f"dangling symbolic link (to {os.path.realpath(link)})", artifact=artifact, path=link
        ) from error
    except OSError as error:
        raise JournalLayoutError(
            f"cannot access: {_reason(error)}", artifact=artifact, path=link
        ) from error


def _artifact_files(
    directory: str, coordinate: ArtifactCoordinate, real_root: Path
) -> list[JournalFile]:
    artifact = str(coordinate)
    found: list[JournalFile] = []
    for entry in _entries(directory, JournalLayoutError):
        name = entry.name
        version = _revision_version(name)  # the usual name, read in one match
        if version is None:
            if name.endswith(EXAMPLE_SUFFIX):
                continue
            raise _name_error(name, directory, artifact)
        try:
            # A regular file by the listing's own type: no stat, and no call.
            regular = entry.is_file(follow_symlinks=False)
        except OSError:
            regular = False  # _is_kind asks again, and reports the fault
        if not regular and not _is_kind(entry, directory, real_root, artifact, "file"):
            raise JournalLayoutError(
                "not a regular file: expected a Journal revision file",
                artifact=artifact,
                path=Path(directory, name),
            )
        try:
            data = _read(entry.path)
        except OSError as error:
            raise JournalLayoutError(
                f"cannot read file: {_reason(error)}", artifact=artifact, path=Path(directory, name)
            ) from error
        # The tuple built in C, not through the named tuple's Python __new__: one per file.
        found.append(_tuple_new(JournalFile, (directory, name, coordinate, version, data)))
    # Already chronological: the names are sorted, and versions are fixed-width digits.
    return found


def _name_error(name: str, directory: str, artifact: str) -> JournalLayoutError:
    """The error of an entry of an artifact directory that is neither a revision file nor
    an example, saying what is wrong with its name."""
    path = Path(directory, name)
    if name.endswith(REVISION_SUFFIX):
        try:
            JournalVersion(name.removesuffix(REVISION_SUFFIX))
        except InvalidValueError as error:
            return JournalLayoutError(
                f"file name is not <journal-version>.journal: {error.detail}",
                artifact=artifact,
                path=path,
            )
    return JournalLayoutError(
        "unexpected entry in an artifact directory: expected <journal-version>.journal files",
        artifact=artifact,
        path=path,
    )


def _read(path: str) -> bytes:
    """The file's bytes, read without a buffered file object (a third of a warm restart's
    reading time went to building one per file)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(descriptor, _READ_SIZE):
            chunks.append(chunk)
    finally:
        os.close(descriptor)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
