"""ContentStore: content-addressed bytes (``sha256:<hex>``) over the ``content.blobs`` resource."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from nenjim.domain.persistence import repositories as domain
from nenjim.domain.persistence.errors import IntegrityError
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.errors import SerializationError
from nenjim.infrastructure.storage import canonical_json

CONTENT_RESOURCE = "content.blobs"
TEXT_CANONICALIZATION = 1


def content_id(data: bytes) -> str:
    """The durable id of ``data``: ``sha256:`` + lowercase hex of its SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class ContentStore(domain.ContentRepository):
    """Immutable content under its SHA-256 id; every fetch re-verifies the digest."""

    def __init__(self, view: storage.View) -> None:
        self._view = view

    @property
    def _blobs(self) -> storage.Blobs:
        return self._view.blobs(CONTENT_RESOURCE)

    @at_boundary
    def put(self, data: bytes, *, canonicalization_version: int) -> str:
        """Store ``data`` once and return its id; the first version value is kept.

        The stored blob is checked against the id inside the write's atomic
        step: an answer that does not match rolls the write back.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"content must be bytes, got {type(data).__name__}")
        version = arguments.canonicalization_version(canonicalization_version)
        data = bytes(data)
        identity = content_id(data)
        attributes = arguments.attributes(
            self._blobs.resource, {"canonicalization_version": version}
        )

        def write(view: storage.View) -> str:
            try:
                stored = view.blobs(CONTENT_RESOURCE).put_if_absent(
                    key=identity, data=data, attributes=attributes
                )
            except storage.BlobConflictError as error:
                raise IntegrityError(f"content {identity} is stored with other bytes") from error
            _verify(identity, stored.key, stored.data)
            return identity

        return self._view.atomic(write)

    @at_boundary
    def fetch(self, identity: str) -> bytes:
        """The bytes of ``identity``; ``NotFoundError`` if absent, ``IntegrityError`` if altered."""
        arguments.content_id(identity)
        blob = self._blobs.fetch(identity)
        _verify(identity, blob.key, blob.data)
        return bytes(blob.data)

    @at_boundary
    def exists(self, identity: str) -> bool:
        """Whether content with that id is stored."""
        arguments.content_id(identity)
        return self._blobs.exists(identity)

    @at_boundary
    def delete(self, identity: str) -> None:
        """Erase the content (idempotent): the blob and its bytes in the log.

        Content is shared by every reference to the same bytes; the caller
        erases it only when nothing that should stay refers to it.
        """
        arguments.content_id(identity)
        self._blobs.purge(key=identity)

    def put_text(self, text: str) -> str:
        """Store UTF-8 text (canonicalization version 1)."""
        if not isinstance(text, str):
            raise TypeError(f"text content must be a str, got {type(text).__name__}")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text content must be valid UTF-8 (lone surrogate)") from None
        return self.put(data, canonicalization_version=TEXT_CANONICALIZATION)

    def put_json(self, value: Any) -> str:
        """Store the Canonical JSON v1 bytes of ``value``."""
        try:
            text = canonical_json.dumps(value)
        except (TypeError, ValueError) as error:
            raise SerializationError(f"content is not Canonical JSON: {error}") from error
        return self.put(text.encode("utf-8"), canonicalization_version=canonical_json.VERSION)

    def fetch_text(self, identity: str) -> str:
        """Content decoded as UTF-8; ``IntegrityError`` if it is not UTF-8."""
        data = self.fetch(identity)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise IntegrityError(f"content {identity} is not UTF-8 text") from error

    def fetch_json(self, identity: str) -> Any:
        """Content parsed as JSON; ``SerializationError`` if it is not JSON."""
        data = self.fetch(identity)
        try:
            return canonical_json.loads(data)
        except ValueError as error:
            raise SerializationError(f"content {identity} is not JSON: {error}") from error

    def fetch_many(self, identities: Iterable[str]) -> Mapping[str, bytes]:
        """Each distinct id's bytes."""
        if isinstance(identities, str | bytes) or not isinstance(identities, Iterable):
            raise TypeError(
                f"identities must be an iterable of content ids, got {type(identities).__name__}"
            )
        wanted = [arguments.content_id(identity) for identity in identities]
        return MappingProxyType({i: self.fetch(i) for i in dict.fromkeys(wanted)})


def _verify(identity: str, key: str, data: bytes) -> None:
    if key != identity or content_id(data) != identity:
        raise IntegrityError(f"content {identity} does not match its digest")
