"""Stable machine output of ``nenjim ... --json``.

One JSON document on stdout: keys sorted, two-space indentation, non-ASCII
escaped, a final newline. Absent values are ``null``; lists are always
present (possibly ``[]``). Digests are ``"sha256:<64 lowercase hex>"``,
Journal versions ``"YYYYMMDDTHHMMSSZ"``, release versions SemVer strings,
requirements canonical (``"1.4.0"``, ``"[1.2.0,2.0.0)"``).

Schema, version 1. ``show`` prints a *revision*; ``release`` a *release*
with two more keys, ``"coordinate"`` and ``"journal_version"`` (the revision
it was read from); ``log`` ``{"coordinate": string, "revisions":
[revision, ...]}`` (oldest first); ``verify`` ``{"root": string,
"artifacts": int, "revisions": int, "heads": [head, ...]}`` (by coordinate)
with ``head = {"coordinate", "journal_version", "digest": string,
"revisions": int}``; ``digest`` ``{"file": string, "digest": string}``;
``new`` ``{"coordinate", "journal_version", "predecessor", "text": string,
"path": string | null}`` (``null`` with ``--stdout``, which writes no file);
``audit`` ``{"ok": bool, "problem": string | null, "events", "artifacts",
"revisions": int}``; ``projections rebuild`` ``{"projection", "summary":
string, "seconds": number}``; ``projections status`` ``{"projections":
[{"name", "log": string, "position", "head", "lag": int}, ...]}``::

    revision = {
      "coordinate":      string,            artifact coordinate
      "journal_version": string,
      "digest":          string,            of the revision's exact bytes
      "predecessor":     string | null,     null for the genesis
      "description":     string | null,
      "information":     string | null,     absolute URI
      "policy":          policy,            the artifact-level policy
      "releases":        [release, ...]     ascending SemVer precedence
    }
    release = {
      "version":      string,
      "description":  string | null,
      "license":      string,               SPDX license expression
      "content":      string,               digest of the released bytes
      "policy":       policy,               the effective policy
      "dependencies": [{"coordinate": string, "requirement": string}, ...],
      "exclusions":   [string, ...],        coordinates, sorted
      "preferences":  [{"coordinate": string, "version": string}, ...]
    }
    policy = {
      "status": "active" | "deprecated" | "yanked" | "revoked",
      "reason": string | null
    }

``dependencies`` and ``preferences`` are ordered by coordinate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nenjim.journal.model import JournalRevision, Policy, Release


def dumps(document: dict[str, object]) -> str:
    """The stable text of a JSON document (without the final newline)."""
    return json.dumps(document, sort_keys=True, indent=2)


def revision_json(revision: JournalRevision) -> dict[str, object]:
    """A revision as the schema's ``revision`` object."""
    return {
        "coordinate": str(revision.coordinate),
        "journal_version": str(revision.version),
        "digest": str(revision.digest),
        "predecessor": _optional(revision.predecessor),
        "description": revision.description,
        "information": revision.information,
        "policy": policy_json(revision.policy),
        "releases": [release_json(release) for release in revision.releases],
    }


def release_json(release: Release) -> dict[str, object]:
    """A release as the schema's ``release`` object."""
    return {
        "version": str(release.version),
        "description": release.description,
        "license": release.license,
        "content": str(release.content),
        "policy": policy_json(release.policy),
        "dependencies": [
            {"coordinate": str(d.coordinate), "requirement": str(d.requirement)}
            for d in release.dependencies
        ],
        "exclusions": sorted(str(c) for c in release.exclusions),
        "preferences": [
            {"coordinate": str(p.coordinate), "version": str(p.version)}
            for p in release.preferences
        ],
    }


def located_release_json(revision: JournalRevision, release: Release) -> dict[str, object]:
    """A release with the coordinate and Journal version of the revision it belongs to."""
    return {
        **release_json(release),
        "coordinate": str(revision.coordinate),
        "journal_version": str(revision.version),
    }


def verify_json(root: Path, chains: Sequence[tuple[JournalRevision, ...]]) -> dict[str, object]:
    """The ``verify`` report: the root, totals and every artifact's head."""
    return {
        "root": str(root),
        "artifacts": len(chains),
        "revisions": sum(len(chain) for chain in chains),
        "heads": [
            {
                "coordinate": str(chain[-1].coordinate),
                "journal_version": str(chain[-1].version),
                "digest": str(chain[-1].digest),
                "revisions": len(chain),
            }
            for chain in chains
        ],
    }


def log_json(chain: Sequence[JournalRevision]) -> dict[str, object]:
    """An artifact's chain, oldest first."""
    return {
        "coordinate": str(chain[0].coordinate),
        "revisions": [revision_json(revision) for revision in chain],
    }


def policy_json(policy: Policy) -> dict[str, object]:
    """A policy as the schema's ``policy`` object."""
    return {"status": policy.status.value, "reason": policy.reason}


def _optional(value: object | None) -> str | None:
    return None if value is None else str(value)
