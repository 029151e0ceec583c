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


DIGEST = "sha256:"
"""What stands in a long storage key for the labels that do not fit, before their digest."""

_KEPT_LABELS_BYTES = MAX_KEY_BYTES - len(DIGEST) - 64
"""The most bytes of a long storage key's labels: the rest is the digest."""


def storage_key(namespace: tuple[str, ...], key: str) -> str:
    """The records key of ``(namespace, key)``: the JSON array of its labels and key.

    Where that text is longer than the SPI's key limit (or not UTF-8), the key
    is a long key: ``[``, the first labels that fit in :data:`_KEPT_LABELS_BYTES`,
    each followed by ``,``, then ``sha256:`` and the hex digest of the whole
    text. Either way the key starts with the JSON text of its namespace's first
    labels, so the items under a namespace prefix are one range of the keys (see
    :func:`prefix_scan`). A long key ends with a hex digit, so it never equals a
    literal key, which ends with ``]``.
    """
    texts = _label_texts((*namespace, key))
    text = "[" + ",".join(texts) + "]"
    try:
        if len(text.encode("utf-8")) <= MAX_KEY_BYTES:
            return text
    except UnicodeEncodeError:  # a lone surrogate: not UTF-8, so not a key as it is
        pass
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _kept_labels(texts)[0] + DIGEST + digest


def prefix_scan(prefix: tuple[str, ...]) -> tuple[str | None, bool]:
    """The key prefix that holds every item under the namespace ``prefix`` (``None``:
    every item), and whether it holds those items only.

    It is ``[`` and the prefix's labels, each followed by ``,``. A prefix whose labels
    do not all fit in a long key's kept labels gives those that fit: a narrowing,
    whose rows the caller matches against the full namespace in their payloads.
    """
    if not prefix:
        return None, True
    kept, count = _kept_labels(_label_texts(prefix))
    return kept, count == len(prefix)


def _label_texts(labels: tuple[object, ...]) -> list[str]:
    """Each label's JSON text, as ``json.dumps`` writes it with ``ensure_ascii=False``."""
    # encode_basestring is what json.dumps writes for a str, without the encoder it makes
    # anew per call: every get and put asks, and that is several microseconds of a get.
    # LangGraph's ops type the key as str; batch() takes ops built by hand.
    return [
        encode_basestring(label)
        if label.__class__ is str
        else json.dumps(label, ensure_ascii=False, separators=(",", ":"))
        for label in labels
    ]


def _kept_labels(texts: list[str]) -> tuple[str, int]:
    """``[`` and the first label texts that fit, each followed by ``,``; how many."""
    kept, size = "[", 1
    for count, text in enumerate(texts):
        try:
            size += len(text.encode("utf-8")) + 1
        except UnicodeEncodeError:
            return kept, count
        if size > _KEPT_LABELS_BYTES:
            return kept, count
        kept += text + ","
    return kept, len(texts)


def is_literal(skey: str) -> bool:
    """Whether storage key ``skey`` is the JSON text of its labels (not a long key)."""
    return skey.endswith("]")


def prefix_text(labels: tuple[str, ...]) -> str:
    """The form of a namespace prefix that the ``pN`` attributes hold: labels joined by
    ``.`` (labels hold none), or ``sha256:<hex>`` of that when longer than an indexed
    string may be."""
    text = ".".join(labels)
    try:
        if len(text.encode("utf-8")) <= MAX_INDEXED_TEXT_BYTES:
            return text
    except UnicodeEncodeError:
        pass
    return f"sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def item_attributes(namespace: tuple[str, ...]) -> dict[str, Any]:
    """The attributes of an item in ``namespace``."""
    attributes: dict[str, Any] = {"listed": True}
    for depth in range(1, PREFIX_DEPTH + 1):
        attributes[f"p{depth}"] = (
            prefix_text(namespace[:depth]) if len(namespace) >= depth else None
        )
    return attributes


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
