"""``nenjim journal verify-log``: a client that checks a served transparency log end to end.

It fetches the checkpoint and checks its signature with the verifier key it
is given, downloads every entry bundle and every tile of that tree,
recomputes the tree from the entries, requires every served tile and the
checkpoint's root to be the recomputed ones, and, given a checkpoint it
trusted before, requires that tree to be a prefix of this one (the root of
the first ``size`` entries is the trusted root). Uses ``httpx`` (the
``serve`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from domain.transparency import (
    Checkpoint,
    JournalLeaf,
    TransparencyError,
    VerifierKey,
    decode_entry_bundle,
    entry_bundles_for_size,
    open_checkpoint,
    tiles_for_size,
)
from journal.impl.ref.transparency import TileBuilder


class LogCheckError(Exception):
    """The served log does not verify (or cannot be read): one line says why."""


@dataclass(frozen=True, slots=True)
class VerifiedLog:
    """What a verification read: the checkpoint, the bytes of leaf data, the tiles."""

    checkpoint: Checkpoint
    leaf_bytes: int
    tiles: int


def verify_log(
    url: str, verifier: VerifierKey, *, since: Checkpoint | None = None, timeout: float = 30.0
) -> VerifiedLog:
    """Verify the log served at ``url`` (its base URL); raise ``LogCheckError`` unless it holds."""
    base = url.rstrip("/") + "/"
    with httpx.Client(base_url=base, timeout=timeout) as client:
        try:
            checkpoint = open_checkpoint(_get(client, "checkpoint").decode("utf-8"), [verifier])
        except (TransparencyError, UnicodeDecodeError) as error:
            raise LogCheckError(f"{base}checkpoint: {error}") from None
        size = checkpoint.size
        if since is not None and since.size > size:
            raise LogCheckError(
                f"the log shrank: the checkpoint trusted before has {since.size} leaves, "
                f"this one {size}"
            )
        builder = TileBuilder()
        leaf_bytes = 0
        for bundle in entry_bundles_for_size(size):
            try:
                entries = decode_entry_bundle(_get(client, bundle.path), bundle.width)
                for entry in entries:
                    JournalLeaf.parse(entry)
            except TransparencyError as error:
                raise LogCheckError(f"{base}{bundle.path}: {error}") from None
            leaf_bytes += sum(map(len, entries))
            if since is not None and builder.size < since.size <= builder.size + len(entries):
                builder.append(entries[: since.size - builder.size])
                _check_prefix(builder, since)
                entries = entries[since.size - bundle.first_entry :]
            builder.append(entries)
        if since is not None and since.size == 0:
            _check_prefix(TileBuilder(), since)
        if builder.root() != checkpoint.root_hash:
            raise LogCheckError(
                f"the {size} served entries do not hash to the checkpoint's root hash"
            )
        expected = builder.tiles()
        tiles = tiles_for_size(size)
        for tile in tiles:
            if _get(client, tile.path) != expected[(tile.level, tile.index)]:
                raise LogCheckError(f"{base}{tile.path} is not the tile of the served entries")
    return VerifiedLog(checkpoint, leaf_bytes, len(tiles))


def _check_prefix(builder: TileBuilder, since: Checkpoint) -> None:
    if builder.root() != since.root_hash:
        raise LogCheckError(
            f"the first {since.size} served entries do not hash to the root of the checkpoint "
            "trusted before: the log was rewritten"
        )


def _get(client: httpx.Client, path: str) -> bytes:
    try:
        response = client.get(path)
    except httpx.HTTPError as error:
        raise LogCheckError(f"cannot fetch {client.base_url}{path}: {error}") from None
    if response.status_code != httpx.codes.OK:
        raise LogCheckError(
            f"{client.base_url}{path}: HTTP {response.status_code} {response.reason_phrase}"
        )
    return response.content
