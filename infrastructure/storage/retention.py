"""Retention: a resource's declared policy of what to keep, applied by purging the rest.

A streams resource may keep the last N entries of each stream
(``Retention(keep_last=N)``); a records resource may drop the rows whose last
write is older than a duration (``Retention(max_age=timedelta(days=30))``).
Blobs have no policy: they are written once and referenced by what outlives
them. Stream entries carry no time, so a streams resource has no ``max_age``.

:func:`apply_retention` purges what a policy drops, one key per transaction,
so writers go on writing while it runs: a stream is cut below the position
its head leaves N entries above, under the stream's guard; a record is purged
only at the revision judged old, so one written since is skipped, not lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage.errors import ConflictError
from nenjim.infrastructure.store.progress import Progress, silent

if TYPE_CHECKING:
    from nenjim.infrastructure.storage.backend import Backend
    from nenjim.infrastructure.storage.purge import Purge
    from nenjim.infrastructure.storage.resource import Resource

PAGE = 500
"""How many keys one read of the key listing returns."""


@immutable
@dataclass(frozen=True, slots=True)
class Retention:
    """What a resource keeps: the last ``keep_last`` entries of each stream, or the records
    written within ``max_age``. Exactly one is given."""

    keep_last: int | None = None
    max_age: timedelta | None = None

    def __post_init__(self) -> None:
        if (self.keep_last is None) == (self.max_age is None):
            raise ValueError("a retention policy gives exactly one of keep_last and max_age")
        if self.keep_last is not None and (type(self.keep_last) is not int or self.keep_last < 1):
            raise ValueError(f"keep_last must be a positive integer, got {self.keep_last!r}")
        if self.max_age is not None and (
            not isinstance(self.max_age, timedelta) or self.max_age <= timedelta(0)
        ):
            raise ValueError(f"max_age must be a positive timedelta, got {self.max_age!r}")


def checked_retention(resource_id: str, kind: str, retention: Any) -> Retention | None:
    """``retention`` if a resource of ``kind`` can have it; ``ValueError`` naming why not."""
    if retention is None:
        return None
    if not isinstance(retention, Retention):
        raise TypeError(
            f"resource {resource_id}: retention must be a Retention, got {type(retention).__name__}"
        )
    if kind == "blobs":
        raise ValueError(f"resource {resource_id}: blobs have no retention policy")
    if kind == "streams" and retention.keep_last is None:
        raise ValueError(
            f"resource {resource_id}: stream entries carry no time; a streams policy is keep_last"
        )
    if kind == "records" and retention.max_age is None:
        raise ValueError(f"resource {resource_id}: a records policy is max_age")
    return retention


@immutable
@dataclass(frozen=True, slots=True)
class RetentionReport:
    """What one application of the policies did."""

    purges: tuple[Purge, ...]
    """Every purge made, resource by resource in catalog order, keys by UTF-8 bytes."""
    skipped: tuple[tuple[str, str], ...]
    """``(resource, key)`` of the records written again while being judged (kept)."""


def apply_retention(
    backend: Backend, *, now: datetime | None = None, progress: Progress = silent
) -> RetentionReport:
    """Purge what every declared policy of ``backend``'s catalog drops (see the module).

    ``now`` is the time record ages are measured at (the current time by default);
    ``progress`` is told ``("retention", done, total)`` resource by resource."""
    moment = datetime.now(UTC) if now is None else now
    governed = [(r, r.retention) for r in backend.resources.values() if r.retention is not None]
    purges: list[Purge] = []
    skipped: list[tuple[str, str]] = []
    progress("retention", 0, len(governed))
    for done, (resource, policy) in enumerate(governed, 1):
        if policy.keep_last is not None:
            purges.extend(_cut_streams(backend, resource, policy.keep_last))
        elif policy.max_age is not None:
            _drop_records(backend, resource, moment - policy.max_age, purges, skipped)
        progress("retention", done, len(governed))
    return RetentionReport(tuple(purges), tuple(skipped))


def _cut_streams(backend: Backend, resource: Resource, keep: int) -> list[Purge]:
    made: list[Purge] = []
    for stream in _keys(backend, resource):
        with backend.transaction() as view:
            streams = view.streams(resource)
            head = streams.head(stream=stream)
            purged = streams.purge(stream=stream, before=max(head - keep + 1, 1))
        if purged is not None:
            made.append(purged)
    return made


def _drop_records(
    backend: Backend,
    resource: Resource,
    cutoff: datetime,
    purges: list[Purge],
    skipped: list[tuple[str, str]],
) -> None:
    for key in _keys(backend, resource):

        def judged(ctx: Any, driver: Any, key: str = key) -> int | None:
            row = driver.read_record(ctx, resource, key)
            written = driver.record_written_at(ctx, resource, key)
            old = row is not None and written is not None and written < cutoff
            return row.revision if old else None

        revision = backend.view.run(judged, writes=False)
        if revision is None:
            continue
        try:
            purged = backend.view.records(resource).purge(key=key, expected_revision=revision)
        except ConflictError:
            skipped.append((resource.id, key))
            continue
        if purged is not None:
            purges.append(purged)


def _keys(backend: Backend, resource: Resource) -> list[str]:
    """Every record key or stream name of ``resource`` now, by UTF-8 bytes."""
    found: list[str] = []
    while True:
        after = found[-1] if found else None

        def page(ctx: Any, driver: Any, after: str | None = after) -> list[str]:
            if resource.kind == "streams":
                return list(driver.stream_names(ctx, resource, after, PAGE))
            rows = driver.scan_records(ctx, resource, {}, after, PAGE)
            return [row.key for row in rows]

        keys = backend.view.run(page, writes=False)
        found.extend(keys)
        if len(keys) < PAGE:
            return found
