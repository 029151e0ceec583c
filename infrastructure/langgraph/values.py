"""Channel and write values: serialized by the saver's ``serde``, small ones inline, the rest
content-addressed within their thread.

A value whose serialized bytes take fewer than :data:`INLINE_LIMIT` bytes is
kept inline in the checkpoint entry or write, in base64 (``inline``). One of
fewer than :data:`COMPRESSED_INLINE_LIMIT` bytes that zlib shrinks by at least
an eighth is kept inline too, compressed (``inline-zlib``). A blob costs a
row, an event, their keys and a reference of ~110 bytes wherever the value is
named: several hundred bytes and, on SQLite, three more pages written by the
commit that stores it, which a value this small does not repay. Any other value
is stored once per thread as a blob keyed ``sha256:<hex>@<scope>``: the digest of
its type tag and bytes, and the thread's scope (:func:`scope_of`, a digest of
the thread id). The same value in a hundred checkpoints of a thread, or in a
pending write and the checkpoint it produces, is one blob; a thread's blobs
are its own, so erasing a thread (``delete_thread``, a prune) can erase its
values without touching another thread's (a copied thread gets its own
copies). Keys
without a scope (``sha256:<hex>``, written before values were scoped) are
shared by every thread and read as before; an erasure never removes them.

A blob is stored zlib-compressed when that saves at least an eighth of it
(attribute ``encoding``: ``zlib`` or ``identity``); its key is the digest of
the uncompressed bytes, so a value has one key however it is stored. A blob
already in the store is never put again (another zlib build may compress the
same bytes differently).

A scoped blob may be erased by another process (a purge of its thread), so
the put of a scoped value always asks the store; only unscoped keys, which
are never erased, are skipped once this process has seen them. What this
process has read is cached by key (bytes, re-checked against their digest
when fetched; every read deserializes afresh, so no caller shares an
object); an erasure drops its keys from the cache.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from nenjim.infrastructure.langgraph.catalog import VALUES
from nenjim.infrastructure.langgraph.stored import ValueRef
from nenjim.infrastructure.storage import SerializationError, View

INLINE_LIMIT = 256
"""Serialized values of fewer bytes are kept inline as they are."""

COMPRESSED_INLINE_LIMIT = 1024
"""Serialized values of fewer bytes that zlib shrinks by an eighth are kept inline,
compressed; the rest from :data:`INLINE_LIMIT` on are content-addressed blobs."""

CACHE_BYTES = 32 * 1024 * 1024
"""The most blob bytes one saver keeps in memory."""

KNOWN_KEYS = 100_000
"""The most blob keys one saver remembers as stored."""


Fetched = tuple[bytes, str]
"""A blob as stored: its bytes and their encoding (``zlib`` or ``identity``)."""


class Serde(Protocol):
    """The part of LangGraph's ``SerializerProtocol`` the saver uses."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


@dataclass(frozen=True, slots=True)
class EncodedValue:
    """A serialized value: its reference, and the blob to store if it is not inline."""

    ref: ValueRef
    data: bytes | None = None


def encode(serde: Serde, value: Any, scope: str) -> EncodedValue:
    """Serialize ``value`` into an inline reference or a content-addressed one in ``scope``
    (:func:`scope_of` the thread id)."""
    type_, data = serde.dumps_typed(value)
    if len(data) < INLINE_LIMIT:
        return EncodedValue(("inline", type_, base64.b64encode(data).decode("ascii")))
    if len(data) < COMPRESSED_INLINE_LIMIT:
        packed, encoding = _compressed(data)
        if encoding == "zlib":
            return EncodedValue(("inline-zlib", type_, base64.b64encode(packed).decode("ascii")))
    return EncodedValue(("blob", type_, f"{digest(type_, data)}@{scope}"), data)


def digest(type_: str, data: bytes) -> str:
    """The content address of serialized bytes and their type tag."""
    return "sha256:" + hashlib.sha256(type_.encode("utf-8") + b"\0" + data).hexdigest()


@lru_cache(maxsize=4096)
def scope_of(thread_id: str) -> str:
    """The scope of a thread's blob keys: 32 hex digits of the SHA-256 of its id (hashed
    once per id: a thread's every put and put_writes names it again)."""
    return hashlib.sha256(b"thread\0" + thread_id.encode("utf-8")).hexdigest()[:32]


def blob_scope(key: str) -> str | None:
    """The scope of a blob key (``None`` for an unscoped key, shared by all threads)."""
    _, at, scope = key.partition("@")
    return scope if at else None


def rescoped(ref: ValueRef, scope: str) -> ValueRef:
    """``ref`` in another thread's scope (inline and unscoped references as they are)."""
    kind, type_, key = ref
    if kind != "blob" or blob_scope(key) is None:
        return ref
    return (kind, type_, f"{key.partition('@')[0]}@{scope}")


class ValueStore:
    """Reads and writes values in the ``langgraph.values`` blobs, with a process cache."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: OrderedDict[str | tuple[str, str], bytes] = OrderedDict()
        """Bytes by blob key, and by inline reference (kind, body)."""
        self._data_bytes = 0
        self._known: OrderedDict[str, None] = OrderedDict()

    def store(
        self,
        view: View,
        values: Iterable[EncodedValue],
        *,
        careful: bool,
        likely: Collection[ValueRef] = (),
    ) -> list[EncodedValue]:
        """Put every blob not known to be stored; the values put (to :meth:`remember`).

        A thread's own (scoped) blob is always put: another process may have
        purged it since this one saw it. A ``careful`` put first asks whether
        the blob is stored: a blob another zlib compressed otherwise makes
        ``put_if_absent`` conflict, which the caller's retry, careful, then
        steps over. So does the put of a ``likely`` one (the parent
        checkpoint's values): one read where a put that finds it costs two.
        """
        blobs = view.blobs(VALUES)
        put: dict[str, EncodedValue] = {}
        for value in values:
            kind, type_, key = value.ref
            if kind != "blob" or value.data is None or key in put:
                continue
            if blob_scope(key) is None and self._is_known(key):
                continue
            if not (careful or value.ref in likely) or not blobs.exists(key):
                data, encoding = _compressed(value.data)
                blobs.put_if_absent(
                    key=key, data=data, attributes={"type": type_, "encoding": encoding}
                )
            put[key] = value
        return list(put.values())

    def remember(self, values: Iterable[EncodedValue]) -> None:
        """Record blobs a committed transaction stored, and keep their bytes: the next read
        of the checkpoint just written (the following step's, another reader's in this
        process) needs no fetch."""
        with self._lock:
            for value in values:
                key = value.ref[2]
                self._remember_key(key)
                if value.data is not None:
                    self._cache(key, value.data)

    def forget(self, keys: Iterable[str]) -> None:
        """Drop erased keys from this process's caches."""
        with self._lock:
            for key in keys:
                self._known.pop(key, None)
                dropped = self._data.pop(key, None)
                if dropped is not None:
                    self._data_bytes -= len(dropped)

    def load(self, serde: Serde, ref: ValueRef, fetch: Callable[[str], Fetched]) -> Any:
        """The value a reference names, deserialized afresh.

        ``fetch(key)`` reads a blob this process has not cached from the store: its
        stored bytes and their ``encoding``.
        """
        kind, type_, body = ref
        if kind in _INLINE_ENCODINGS:
            data = self._inline(kind, body)
        elif kind == "blob":
            data = self._blob(type_, body, fetch)
        else:
            raise SerializationError(f"stored value reference has unknown kind {kind!r}")
        return serde.loads_typed((type_, data))

    def _blob(self, type_: str, key: str, fetch: Callable[[str], Fetched]) -> bytes:
        cached = self._cached(key)
        if cached is not None:
            return cached
        stored, encoding = fetch(key)
        data = _decompressed(f"value {key}", stored, encoding)
        if digest(type_, data) != key.partition("@")[0]:
            raise SerializationError(f"stored value {key} does not match its digest")
        with self._lock:
            self._remember_key(key)
            self._cache(key, data)
        return data

    def _inline(self, kind: str, body: str) -> bytes:
        """The bytes of an inline reference, decoded once per text while they stay in the
        cache with the blobs' (a thread's newest values are read again and again)."""
        key = (kind, body)
        cached = self._cached(key)
        if cached is not None:
            return cached
        data = _inline_bytes(kind, body)
        with self._lock:
            self._cache(key, data)
        return data

    def _cached(self, key: str | tuple[str, str]) -> bytes | None:
        """The bytes kept under ``key``, now the most recently used; ``None`` if none."""
        with self._lock:
            cached = self._data.get(key)
            if cached is not None:
                self._data.move_to_end(key)
            return cached

    def _cache(self, key: str | tuple[str, str], data: bytes) -> None:
        """Keep a value's bytes (under the lock), the least recently used dropped past
        :data:`CACHE_BYTES`."""
        if len(data) <= CACHE_BYTES // 4 and key not in self._data:
            self._data[key] = data
            self._data_bytes += len(data)
            while self._data_bytes > CACHE_BYTES:
                _, dropped = self._data.popitem(last=False)
                self._data_bytes -= len(dropped)

    def _is_known(self, key: str) -> bool:
        with self._lock:
            return key in self._known

    def _remember_key(self, key: str) -> None:
        self._known[key] = None
        self._known.move_to_end(key)
        if len(self._known) > KNOWN_KEYS:
            self._known.popitem(last=False)


_INLINE_ENCODINGS = {"inline": "identity", "inline-zlib": "zlib"}
"""The encoding of an inline reference's bytes, by its kind."""


def _inline_bytes(kind: str, body: str) -> bytes:
    """The serialized bytes of an inline reference's ``body`` (base64, of the bytes
    ``kind`` says)."""
    try:
        # base64.b64decode(body, validate=True) in one call: the same text refused.
        data = binascii.a2b_base64(body, strict_mode=True)
    except ValueError as error:
        raise SerializationError(f"stored inline value is not base64: {error}") from error
    return _decompressed("inline value", data, _INLINE_ENCODINGS[kind])


def _compressed(data: bytes) -> tuple[bytes, str]:
    """``data`` zlib-compressed if that saves at least an eighth, else as is."""
    packed = zlib.compress(data)
    if len(packed) <= len(data) - len(data) // 8:
        return packed, "zlib"
    return data, "identity"


def _decompressed(what: str, data: bytes, encoding: str) -> bytes:
    """``data`` inflated as ``encoding`` says; ``what`` names the value in an error."""
    if encoding == "identity":
        return data
    if encoding == "zlib":
        try:
            return zlib.decompress(data)
        except zlib.error as error:
            raise SerializationError(f"stored {what} does not inflate: {error}") from error
    raise SerializationError(f"stored {what} has unknown encoding {encoding!r}")
