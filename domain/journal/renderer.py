"""Renders a :class:`JournalDocument` as canonical Journal text (format version 1).

Canonical means: header in the table's order, one blank line before each
release, release lines indented by two spaces, redundant lines (an
``active`` header policy, a release policy equal to the header's) left out.
Parsing the result gives back an equal document, provided the document obeys
the format's value and semantic rules (as every parsed document does). A
description that no quoted string can carry (empty, or with a control
character other than TAB/LF) raises :class:`InvalidValueError`.
"""

from __future__ import annotations

from nenjim.domain.journal.document import JournalDocument, Release
from nenjim.domain.journal.values import ACTIVE_POLICY, Policy, quote

__all__ = ["quote", "render_journal"]


def render_journal(document: JournalDocument) -> str:
    """The canonical LF-terminated text of ``document``."""
    lines = [
        "NENJIM-JOURNAL 1",
        f"ARTIFACT {document.coordinate}",
        f"JOURNAL_VERSION {document.version}",
    ]
    if document.predecessor is not None:
        lines.append(f"PREDECESSOR {document.predecessor}")
    if document.description is not None:
        lines.append(f"DESCRIPTION {quote(document.description)}")
    if document.information is not None:
        lines.append(f"INFORMATION {document.information}")
    if document.policy != ACTIVE_POLICY:
        lines.append(f"POLICY {document.policy}")
    for release in document.releases:
        lines.extend(["", *_release(release, document.policy)])
    return "\n".join(lines) + "\n"


def _release(release: Release, header_policy: Policy) -> list[str]:
    lines = [f"RELEASE {release.version}"]
    if release.description is not None:
        lines.append(f"  DESCRIPTION {quote(release.description)}")
    lines.append(f"  LICENSE {release.license}")
    lines.append(f"  CONTENT {release.content}")
    if release.policy != header_policy:
        lines.append(f"  POLICY {release.policy}")
    lines.extend(f"  DEPENDENCY {d.coordinate} {d.requirement}" for d in release.dependencies)
    lines.extend(f"  EXCLUDE {c}" for c in sorted(release.exclusions))
    lines.extend(f"  PREFER {p.coordinate} {p.version}" for p in release.preferences)
    return lines
