"""Stable machine output of ``nenjim journal show|release --json``.

One JSON document on stdout: keys sorted, two-space indentation, non-ASCII
escaped, a final newline. Absent values are ``null``; lists are always
present (possibly ``[]``). Digests are ``"sha256:<64 lowercase hex>"``,
Journal versions ``"YYYYMMDDTHHMMSSZ"``, release versions SemVer strings,
requirements canonical (``"1.4.0"``, ``"[1.2.0,2.0.0)"``).

Schema, version 1 (``show --json`` prints a *revision*, ``release --json`` a
*release*)::

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

from journal.model import JournalRevision, Policy, Release


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


def policy_json(policy: Policy) -> dict[str, object]:
    """A policy as the schema's ``policy`` object."""
    return {"status": policy.status.value, "reason": policy.reason}


def _optional(value: object | None) -> str | None:
    return None if value is None else str(value)
