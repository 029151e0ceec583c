"""How an item is stored: its storage key, its index attributes and its payload.

This module imports no LangGraph package.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring
from typing import Any

from nenjim.infrastructure.langgraph.store.catalog import PREFIX_DEPTH
from nenjim.infrastructure.storage import DurableRecord
from nenjim.infrastructure.storage.scalars import MAX_INDEXED_TEXT_BYTES, MAX_KEY_BYTES

ITEM_TYPE = "langgraph.store.item"
TTL_TYPE = "langgraph.store.ttl"
FORMAT = "1.0"


def storage_key(namespace: tuple[str, ...], key: str) -> str:
    """The records key of ``(namespace, key)``: the JSON array of its labels and key, or
    ``sha256:<hex>`` of that text when it is longer than the SPI's key limit.

    A JSON array starts with ``[``, so a digest never equals a literal key.
    """
    labels = (*namespace, key)
    for label in labels:
        if label.__class__ is not str:
            text = json.dumps(labels, ensure_ascii=False, separators=(",", ":"))
            break
    else:
        # What json.dumps writes for strings, without the encoder it makes anew per
        # call: every get and put asks, and that is several microseconds of a get.
        text = "[" + ",".join(map(encode_basestring, labels)) + "]"
    try:
        if len(text.encode("utf-8")) <= MAX_KEY_BYTES:
            return text
    except UnicodeEncodeError:  # a lone surrogate: not UTF-8, so not a key as it is
        pass
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest}"


def prefix_text(labels: tuple[str, ...]) -> str:
    """The indexed form of a namespace prefix: labels joined by ``.`` (labels hold none),
    or ``sha256:<hex>`` of that when longer than an indexed string may be.

    Only a scan's narrowing: every candidate is matched against the full namespace
    in its payload, so a digest that equals some literal text costs a row, not a result.
    """
    text = ".".join(labels)
    try:
        if len(text.encode("utf-8")) <= MAX_INDEXED_TEXT_BYTES:
            return text
    except UnicodeEncodeError:
        pass
    return f"sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def item_attributes(namespace: tuple[str, ...]) -> dict[str, Any]:
    """The index attributes of an item in ``namespace``."""
    attributes: dict[str, Any] = {"listed": True}
    for depth in range(1, PREFIX_DEPTH + 1):
        attributes[f"p{depth}"] = (
            prefix_text(namespace[:depth]) if len(namespace) >= depth else None
        )
    return attributes


def scan_of(prefix: tuple[str, ...]) -> tuple[str | None, dict[str, Any]]:
    """The index and values to scan for items under ``prefix`` (labels only, no wildcard);
    ``None``: every item."""
    depth = min(len(prefix), PREFIX_DEPTH)
    if depth == 0:
        return None, {}
    return f"p{depth}", {f"p{depth}": prefix_text(prefix[:depth])}


def exact_scan(prefix: tuple[str, ...]) -> bool:
    """Whether the scan of :func:`scan_of` finds exactly the items under ``prefix``: the
    prefix is within the indexed depth and its text is literal (labels hold no ``.``, so
    equal texts are equal labels). A digest is only a narrowing."""
    depth = len(prefix)
    return depth == 0 or (depth <= PREFIX_DEPTH and not prefix_text(prefix).startswith("sha256:"))


@dataclass(frozen=True, slots=True)
class StoredItem:
    """An item as its payload holds it."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl: float | None

    def record(self) -> DurableRecord:
        """The durable record of this item."""
        return DurableRecord(
            ITEM_TYPE,
            FORMAT,
            {
                "namespace": list(self.namespace),
                "key": self.key,
                "value": self.value,
                "created_at": self.created_at.isoformat(),
                "updated_at": self.updated_at.isoformat(),
                "ttl": self.ttl,
            },
        )


def decode_item(record: DurableRecord) -> StoredItem:
    """The :class:`StoredItem` a stored record holds."""
    return item_of_payload(record.payload)


def item_of_payload(payload: dict[str, Any]) -> StoredItem:
    """The :class:`StoredItem` a stored record's payload (parsed) holds."""
    ttl = payload.get("ttl")
    return StoredItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=payload["value"],
        created_at=datetime.fromisoformat(payload["created_at"]),
        updated_at=datetime.fromisoformat(payload["updated_at"]),
        ttl=None if ttl is None else float(ttl),
    )


def ttl_record(expires_at: datetime) -> DurableRecord:
    """The durable record of an item's expiry."""
    return DurableRecord(TTL_TYPE, FORMAT, {"expires_at": expires_at.isoformat()})


def decode_expiry(record: DurableRecord) -> datetime:
    """The expiry a TTL record holds."""
    return datetime.fromisoformat(record.payload["expires_at"])


def expiry(now: datetime, ttl_minutes: float) -> datetime:
    """When an item put or refreshed at ``now`` with ``ttl_minutes`` expires."""
    return now + timedelta(minutes=ttl_minutes)


def utc_now() -> datetime:
    """The time now, in UTC."""
    return datetime.now(UTC)


def plain_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as a plain dict (LangGraph stores take any mapping)."""
    return dict(value)
