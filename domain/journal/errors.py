"""The Journal's exception hierarchy (published as ``nenjim.journal.exception``).

Every error carries where it happened — artifact, file and 1-based line when
known — and renders them into its one-line message, so a caller that only
prints ``str(error)`` still tells the user what and where. A message is one
line whatever the names in it hold: see :func:`one_line`.
"""

from __future__ import annotations

import enum
from pathlib import Path


def one_line(text: str) -> str:
    """``text`` with every non-printable character written as its Python escape.

    File names and stored texts may hold line breaks, escape sequences or
    invisible characters; escaped (``\\n``, ``\\x1b``, ``\\u2028`` ...) they can
    neither split a message into lines nor drive a terminal.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class JournalError(Exception):
    """Base of every Journal error."""

    def __init__(
        self,
        detail: str,
        *,
        artifact: str | None = None,
        path: Path | str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.artifact = artifact
        self.path = None if path is None else Path(path)
        self.line = line

    def locate(
        self,
        *,
        artifact: str | None = None,
        path: Path | str | None = None,
        line: int | None = None,
    ) -> None:
        """Fill in location facts that the raiser could not know; known ones stay."""
        if self.artifact is None and artifact is not None:
            self.artifact = artifact
        if self.path is None and path is not None:
            self.path = Path(path)
        if self.line is None and line is not None:
            self.line = line

    def __str__(self) -> str:
        where = []
        if self.artifact is not None:
            where.append(f"artifact {self.artifact}")
        if self.path is not None:
            where.append(f"path {self.path}")
        if self.line is not None:
            where.append(f"line {self.line}")
        return one_line(f"{self.detail} ({', '.join(where)})" if where else self.detail)


class InvalidValueError(JournalError, ValueError):
    """A value type was given text that is not its canonical syntax."""


class JournalFormatError(JournalError):
    """Empty/blank text, bad encoding, bad structure, unknown/missing/repeated keyword."""


class JournalValidationError(JournalError):
    """A semantic rule of one Journal text is broken."""


class ChainViolation(enum.Enum):
    """Which chain or history rule a rejected revision broke."""

    DUPLICATE_GENESIS = "duplicate genesis"
    UNKNOWN_PREDECESSOR = "unknown predecessor"
    CROSS_ARTIFACT_PREDECESSOR = "predecessor belongs to another artifact"
    FORK = "predecessor is not the current head"
    NON_INCREASING_VERSION = "journal version not later than the predecessor's"
    RELEASE_REMOVED = "release removed"
    CONTENT_CHANGED = "release content changed"
    DIGEST_TAKEN = "digest already belongs to another artifact"


class JournalChainError(JournalError):
    """A chain or history rule is broken; ``reason`` tells which."""

    def __init__(
        self,
        reason: ChainViolation,
        detail: str,
        *,
        artifact: str | None = None,
        path: Path | str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(f"{reason.value}: {detail}", artifact=artifact, path=path, line=line)
        self.reason = reason


class JournalConflictError(JournalError):
    """A different text for an artifact and Journal version that is already accepted."""


class JournalLayoutError(JournalError):
    """A file or directory is misplaced, misnamed or unexpected on disk."""


class JournalRootError(JournalError):
    """The Journal root is missing, not a directory or unreadable."""


class JournalIntegrityError(JournalError):
    """The stored log contradicts itself or its digest claims (edited or corrupt)."""


class JournalStoreError(JournalError):
    """The store cannot be used: it holds another Journal (a store belongs to one Journal
    only), does not exist where it is to be read, cannot be reached, read or written, was
    written by an incompatible version, or its URL names no store this build can open."""


class LifecycleError(JournalError, RuntimeError):
    """The Journal was used out of lifecycle order."""
