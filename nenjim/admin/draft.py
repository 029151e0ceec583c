"""Successor drafts for ``nenjim journal new``: the head's content, one step later."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nenjim.domain.journal.renderer import render_journal
from nenjim.journal.impl.ref.filesystem import REVISION_SUFFIX
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import JournalVersion

LAST_VERSION = JournalVersion("99991231T235959Z")
"""The latest instant a Journal version can name (its year has four digits)."""


class DraftError(ValueError):
    """A successor of the head cannot be drafted: no Journal version is later than it."""


def utc_now() -> datetime:
    """The current aware UTC time (the draft's clock)."""
    return datetime.now(UTC)


def next_version(head: JournalVersion, now: datetime) -> JournalVersion:
    """``now`` as a Journal version, or one second after ``head`` if ``now`` is not later.

    A successor must be strictly later than its predecessor, and a head may lie
    in the future or in the current second. A head at :data:`LAST_VERSION` has
    no later version: :class:`DraftError`.
    """
    candidate = JournalVersion.from_datetime(now)
    if candidate > head:
        return candidate
    if head >= LAST_VERSION:
        raise DraftError(
            f"no Journal version is later than {head}, the last one (9999-12-31 23:59:59 "
            "UTC): a successor of this head cannot be drafted"
        )
    return JournalVersion.from_datetime(head.instant + timedelta(seconds=1))


def successor_text(head: JournalRevision, now: datetime) -> tuple[JournalVersion, str]:
    """The canonical text of a successor of ``head`` with the same content, and its version."""
    version = next_version(head.version, now)
    draft = replace(head.document, version=version, predecessor=head.digest)
    return version, render_journal(draft)


def draft_path(root: Path, head: JournalRevision, version: JournalVersion) -> Path:
    """Where the loader expects the revision: ``<root>/<coordinate>/<version>.journal``."""
    return root / str(head.coordinate) / f"{version}{REVISION_SUFFIX}"


def write_new_file(path: Path, text: str) -> None:
    """Write ``text`` byte for byte to a file that must not exist yet.

    Raises ``FileExistsError`` rather than overwrite: an accepted revision's
    text may never change.
    """
    # newline="" keeps LF endings exact on every platform, so the digest is the rendered one.
    with path.open("x", encoding="utf-8", newline="") as file:
        file.write(text)
