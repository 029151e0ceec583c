"""Whether an SQL store was opened with a resource catalog: what the storage audit should check.

The audit checks a store against a resource list, and both an event of a
resource outside the list and a generated index of a listed resource that
is missing are findings. One store may hold domain Persistence, the
LangGraph saver, or both; each catalog is in the list exactly when a
backend over it has opened the store, which left the catalog's generated
indexes recorded in the store (``storage_generated_indexes``). A catalog
without any record index leaves no such trace and cannot be found this way.
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
    return any(resource.id in recorded for resource in resources)
