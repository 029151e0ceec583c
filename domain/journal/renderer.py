"""Renders a :class:`JournalDocument` as canonical Journal text (format version 1).

Canonical means: header in the table's order, one blank line before each
release, release lines indented by two spaces, redundant lines (an
``active`` header policy, a release policy equal to the header's) left out.
Parsing the result gives back an equal document.
"""

from __future__ import annotations

from domain.journal.document import JournalDocument, Release
from domain.journal.values import ACTIVE_POLICY, Policy


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
        lines.append(f"POLICY {_policy(document.policy)}")
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
        lines.append(f"  POLICY {_policy(release.policy)}")
    lines.extend(f"  DEPENDENCY {d.coordinate} {d.requirement}" for d in release.dependencies)
    lines.extend(f"  EXCLUDE {c}" for c in sorted(release.exclusions))
    lines.extend(f"  PREFER {p.coordinate} {p.version}" for p in release.preferences)
    return lines


def _policy(policy: Policy) -> str:
    status = policy.status.value
    return status if policy.reason is None else f"{status} {quote(policy.reason)}"


def quote(text: str) -> str:
    """A quoted string with the format's four escapes."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'
