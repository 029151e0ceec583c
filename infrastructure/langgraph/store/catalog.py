"""The Store's resource catalog: items and their TTL clocks.

A catalog of its own, apart from the checkpointer's (one backend may
register both). Resource ids are stored in every row and event: they never
change. This module imports no LangGraph package.
"""

from __future__ import annotations

from nenjim.infrastructure.storage import Resource

PREFIX_DEPTH = 3
"""Items keep their namespace's first one, two and three labels (``p1``..``p3``)."""

ITEMS = Resource(
    "langgraph.store.items",
    "records",
    attributes={
        "listed": "boolean",
        "p1": "nullable_string",
        "p2": "nullable_string",
        "p3": "nullable_string",
    },
    # No index: the items under a namespace prefix are a range of the keys. ``listed``
    # (always true) and ``p1``..``p3`` are still written, as in stores made when a search
    # scanned their indexes, so that a build before this one, which makes those indexes
    # again, still finds every item.
)
"""One row per item, keyed by :func:`~.codec.storage_key` of its namespace and key.

The payload holds the full namespace, key, value, ``created_at``,
``updated_at`` and ``ttl`` (minutes, or null). A search under a prefix scans
the range of keys that start with the prefix's labels. ``pN`` is the
namespace's first N labels joined by ``.`` (a digest when long; null when the
namespace is shorter).
"""

TTLS = Resource(
    "langgraph.store.ttls",
    "records",
    # ``listed`` (always true) is still written, as for items; the sweeper takes every row.
    attributes={"listed": "boolean"},
)
"""The expiry of each item put with a TTL, under the item's storage key.

Kept apart from the item so that a refresh on read rewrites this small row,
not the item's value; the sweeper scans it.
"""

STORE_CATALOG: tuple[Resource, ...] = (ITEMS, TTLS)
"""Every resource of the Store."""
