"""Whether an SQL store was opened with a resource catalog: what the storage audit should check.

The audit checks a store against a resource list, and both an event of a
resource outside the list and a generated index of a listed resource that
is missing are findings. One store may hold domain Persistence, the
LangGraph saver, the LangGraph Store, or several; each catalog is in the
list when a backend over it has opened the store, which left the catalog's
generated indexes recorded in the store (``storage_generated_indexes``), or
when the store holds a row of one of its resources (a catalog without any
record index, as the Store's, leaves only its rows).
"""

from __future__ import annotations

from collections.abc import Sequence

from nenjim.infrastructure.storage import Resource
from nenjim.infrastructure.storage.audit.sessions import SqlStore


def catalog_in_store(url: str, resources: Sequence[Resource]) -> bool:
    """True if a backend over ``resources`` opened the SQL store at ``url`` (read-only check).

    ``StoreNotFoundError`` if the URL names no storage, ``UnsupportedBackendError``
    for ``memory:`` or a malformed URL; nothing is created.
    """
    store = SqlStore.from_url(url)
    with store.snapshot() as session:
        recorded = {str(row[0]) for row in session.all("SELECT resource FROM {generated}")}
        if any(resource.id in recorded for resource in resources):
            return True
        for resource in resources:
            table = _ROWS[resource.kind]
            if session.one(f"SELECT 1 FROM {table} WHERE resource = ? LIMIT 1", [resource.id]):
                return True
    return False


_ROWS = {"records": "{records}", "streams": "{heads}", "blobs": "{blobs}"}
"""The table of a resource's live rows, by its kind (each keyed by resource first)."""
