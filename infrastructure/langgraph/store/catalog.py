"""The Store's resource catalog: items and their TTL clocks.

A catalog of its own, apart from the checkpointer's (one backend may
register both). Resource ids are stored in every row and event: they never
change. This module imports no LangGraph package.
"""

from __future__ import annotations

from nenjim.infrastructure.storage import Resource

PREFIX_DEPTH = 3
"""Namespaces are indexed by their first one, two and three labels (``p1``..``p3``)."""

ITEMS = Resource(
    "langgraph.store.items",
    "records",
    attributes={
        "listed": "boolean",
        "p1": "nullable_string",
        "p2": "nullable_string",
        "p3": "nullable_string",
    },
    # ``listed`` (always true) is still written, as in stores made when a search of
    # every namespace scanned an index of it; that scan now takes every row by key.
    indexes={"p1": ("p1",), "p2": ("p2",), "p3": ("p3",)},
)
"""One row per item, keyed by :func:`~.codec.storage_key` of its namespace and key.

The payload holds the full namespace, key, value, ``created_at``,
``updated_at`` and ``ttl`` (minutes, or null). ``pN`` is the namespace's
first N labels joined by ``.`` (a digest when long; null when the namespace
is shorter): a search under a prefix scans the deepest of them it gives.
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
