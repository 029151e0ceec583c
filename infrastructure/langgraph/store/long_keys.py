"""The move of items stored under a long key of the earlier form.

Builds before long keys kept their first labels stored an item whose labels
were longer than a key under ``sha256:<hex>`` alone, outside the range of
keys a search under its namespace scans. Opening a store moves each such item
(and its TTL row) to its key of this form, once: the probe that finds none is
one read of a range of the primary key.
"""

from __future__ import annotations

from nenjim.infrastructure.langgraph.store.catalog import ITEMS, TTLS
from nenjim.infrastructure.langgraph.store.codec import DIGEST, decode_item, storage_key
from nenjim.infrastructure.langgraph.store.operations import retrying
from nenjim.infrastructure.storage import Backend, RecordEntry, Records, View


def move_digested_items(backend: Backend) -> int:
    """Move every item stored under ``sha256:<hex>`` to its storage key, with its TTL row;
    how many moved. The old keys are purged, so that no revision of an item stays in the
    log under a key its delete would not erase.

    Should the new key hold an item too (a build before this one wrote the item again
    after this one moved it), the item updated last is kept.
    """
    if not backend.view.records(ITEMS).scan_keys(index=None, equals={}, key_prefix=DIGEST, limit=1):
        return 0

    def move(view: View) -> int:
        items, ttls = view.records(ITEMS), view.records(TTLS)
        moved = 0
        for row in items.scan(index=None, equals={}, key_prefix=DIGEST):
            item = decode_item(row.record)
            key = storage_key(item.namespace, item.key)
            there = items.read(key)
            if there is None:
                items.insert(key=key, revision=0, attributes=row.attributes, record=row.record)
                _move_ttl(ttls, row.key, key)
            elif decode_item(there.record).updated_at < item.updated_at:
                items.replace(
                    key=key,
                    expected_revision=there.revision,
                    next_revision=there.revision + 1,
                    attributes=row.attributes,
                    record=row.record,
                )
                ttls.purge(key=key)
                _move_ttl(ttls, row.key, key)
            items.purge(key=row.key)
            ttls.purge(key=row.key)
            moved += 1
        return moved

    return retrying(backend, move)


def _move_ttl(ttls: Records, old: str, new: str) -> None:
    row: RecordEntry | None = ttls.read(old)
    if row is not None:
        ttls.insert(key=new, revision=0, attributes=row.attributes, record=row.record)
