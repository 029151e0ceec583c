"""Human output of ``nenjim journal``: aligned plain-text views of the Journal model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nenjim.cli.table import format_table
from nenjim.journal.model import JournalRevision, Policy, Release
from nenjim.journal.valuetypes import Sha256Digest

ABSENT = "-"
SHORT_DIGEST_HEX = 12


def short_digest(digest: Sha256Digest) -> str:
    """``sha256:`` and the first twelve hex digits: enough to tell revisions apart by eye."""
    return str(digest)[: len("sha256:") + SHORT_DIGEST_HEX]


def render_verify(root: Path, chains: Sequence[tuple[JournalRevision, ...]]) -> str:
    """The ``verify`` report: totals, then one row per artifact with its head."""
    revisions = sum(len(chain) for chain in chains)
    lines = [f"journal OK: {root}", f"artifacts: {len(chains)}, revisions: {revisions}"]
    if chains:
        rows = [
            [
                str(chain[-1].coordinate),
                str(len(chain)),
                str(chain[-1].version),
                str(chain[-1].digest),
            ]
            for chain in chains
        ]
        lines += ["", format_table(rows, ["ARTIFACT", "REVISIONS", "HEAD", "HEAD DIGEST"])]
    return "\n".join(lines)


def render_log(chain: Sequence[JournalRevision]) -> str:
    """An artifact's chain, oldest first, marking the genesis and the head."""
    rows = [
        [
            str(revision.version),
            str(revision.digest),
            ABSENT if revision.predecessor is None else short_digest(revision.predecessor),
            str(len(revision.releases)),
            _marks(revision, is_head=position == len(chain) - 1),
        ]
        for position, revision in enumerate(chain)
    ]
    header = ["JOURNAL VERSION", "DIGEST", "PREDECESSOR", "RELEASES", "MARK"]
    title = f"{chain[0].coordinate}: {len(chain)} revision{'s' if len(chain) != 1 else ''}"
    return f"{title}\n\n{format_table(rows, header)}"


def render_revision(revision: JournalRevision) -> str:
    """A revision's header fields, then its releases as a table."""
    header = format_table(
        [
            ["artifact", str(revision.coordinate)],
            ["journal version", str(revision.version)],
            ["digest", str(revision.digest)],
            ["predecessor", _or_absent(revision.predecessor)],
            ["description", _or_absent(revision.description)],
            ["information", _or_absent(revision.information)],
            ["policy", render_policy(revision.policy)],
        ]
    )
    if not revision.releases:
        return f"{header}\n\nno releases"
    rows = [
        [
            str(r.version),
            r.license,
            render_policy(r.policy),
            str(r.content),
            ", ".join(f"{d.coordinate} {d.requirement}" for d in r.dependencies) or ABSENT,
        ]
        for r in revision.releases
    ]
    table = format_table(rows, ["VERSION", "LICENSE", "POLICY", "CONTENT", "DEPENDENCIES"])
    return f"{header}\n\n{table}"


def render_release(revision: JournalRevision, release: Release) -> str:
    """Every field of one release, as the given revision knows it."""
    rows = [
        ["artifact", str(revision.coordinate)],
        ["journal version", str(revision.version)],
        ["version", str(release.version)],
        ["description", _or_absent(release.description)],
        ["license", release.license],
        ["content", str(release.content)],
        ["policy", render_policy(release.policy)],
        *_listing(
            "dependencies", [f"{d.coordinate} {d.requirement}" for d in release.dependencies]
        ),
        *_listing("exclusions", sorted(str(c) for c in release.exclusions)),
        *_listing("preferences", [f"{p.coordinate} {p.version}" for p in release.preferences]),
    ]
    return format_table(rows)


def render_policy(policy: Policy) -> str:
    """``status`` or ``status (reason)``."""
    status = policy.status.value
    return status if policy.reason is None else f"{status} ({policy.reason})"


def _listing(label: str, values: list[str]) -> list[list[str]]:
    """One row per value, the label on the first only; ``-`` when there are none."""
    if not values:
        return [[label, ABSENT]]
    return [[label if i == 0 else "", value] for i, value in enumerate(values)]


def _marks(revision: JournalRevision, *, is_head: bool) -> str:
    marks = (["genesis"] if revision.is_genesis else []) + (["head"] if is_head else [])
    return ", ".join(marks)


def _or_absent(value: object | None) -> str:
    return ABSENT if value is None else str(value)
