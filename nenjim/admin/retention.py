"""Applying retention policies to a durable-state store: what they drop is purged.

:func:`retain_storage` opens the store (never creating it) over the catalogs
it was opened with, gives the named resources the policies asked for, and
applies every policy the catalog then declares
(:func:`nenjim.infrastructure.storage.apply_retention`): one purge per key,
beside running writers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta

from nenjim.admin.audits import storage_catalog
from nenjim.infrastructure.storage import Retention, RetentionReport, apply_retention, open_backend
from nenjim.infrastructure.storage.audit.sessions import SqlStore
from nenjim.infrastructure.store.progress import Progress, silent

__all__ = [
    "Retention",
    "RetentionPolicyError",
    "RetentionReport",
    "parse_duration",
    "retain_storage",
]

_DURATION = re.compile(r"([1-9][0-9]*)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class RetentionPolicyError(ValueError):
    """A policy asked for a resource the store's catalog lacks, or one its kind cannot
    follow."""


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` as a ``timedelta``; ``ValueError`` else."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(
            f"not a duration: {text!r} (a positive whole number and one of s, m, h, d, w)"
        )
    return timedelta(**{_UNITS[match[2]]: int(match[1])})


def retain_storage(
    url: str, policies: Mapping[str, Retention], progress: Progress = silent
) -> RetentionReport:
    """Apply to the store ``url`` its catalog's policies, with ``policies`` (by resource
    id) given to those resources; :class:`RetentionPolicyError` for an unknown resource or
    a policy its kind cannot follow."""
    with SqlStore.from_url(url, "apply retention to").snapshot():
        pass  # the store exists and holds storage: opening a backend creates neither
    catalog = storage_catalog(url)
    unknown = sorted(set(policies).difference(resource.id for resource in catalog))
    if unknown:
        known = ", ".join(resource.id for resource in catalog)
        raise RetentionPolicyError(
            f"no resource {', '.join(unknown)} in the store's catalog ({known})"
        )
    try:
        resources = [
            resource.retained(policies[resource.id]) if resource.id in policies else resource
            for resource in catalog
        ]
    except ValueError as error:
        raise RetentionPolicyError(str(error)) from None
    backend = open_backend(url, resources)
    try:
        return apply_retention(backend, progress=progress)
    finally:
        backend.close()
