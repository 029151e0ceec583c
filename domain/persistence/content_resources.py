"""Storage declaration of the content store (catalog row ``content.blobs``)."""

from __future__ import annotations

from infrastructure.storage import Resource

CONTENTS = Resource("content.blobs", "blobs", attributes={"canonicalization_version": "integer"})
"""Content-addressed blobs, keyed by ``sha256:<hex>`` of their bytes; no envelope."""
