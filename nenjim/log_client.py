"""``nenjim journal verify-log``: a client that checks a served transparency log end to end.

It fetches the checkpoint and checks its signature with the verifier key it
is given, downloads every entry bundle and every tile of that tree,
recomputes the tree from the entries, requires every served tile and the
checkpoint's root to be the recomputed ones, and, given a checkpoint it
trusted before, requires that tree to be a prefix of this one (the root of
the first ``size`` entries is the trusted root). Given a local Journal root,
it also requires the root's revision files and the log's entries to be the
same revisions, byte for byte (each entry's digest is the SHA-256 of its
file). Uses ``httpx`` (the ``serve`` extra).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import httpx

from domain.transparency import (
    Checkpoint,
    TransparencyError,
    VerifierKey,
    entry_bundles_for_size,
    open_checkpoint,
    tiles_for_size,
)
from journal.impl.ref.filesystem import scan_root
from nenjim.log_hashing import LogCheckError, LoggedLeaves, pool_workers, recompute_log

__all__ = ["LogCheckError", "VerifiedLog", "verify_log"]


@dataclass(frozen=True, slots=True)
class VerifiedLog:
    """What a verification read: the checkpoint, the bytes of leaf data, the tiles."""

    checkpoint: Checkpoint
    leaf_bytes: int
    tiles: int


def verify_log(
    url: str,
    verifier: VerifierKey,
    *,
    since: Checkpoint | None = None,
    root: Path | None = None,
    timeout: float = 30.0,
) -> VerifiedLog:
    """Verify the log served at ``url`` (its base URL); raise ``LogCheckError`` unless it holds.

    ``root``: a local Journal root whose revision files must be exactly the
    log's entries (the Journal's errors name a root that cannot be read).
    """
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
        fetched = ((bundle, _get(client, bundle.path)) for bundle in entry_bundles_for_size(size))
        log = recompute_log(
            fetched,
            since=since,
            with_leaves=root is not None,
            where=base,
            workers=pool_workers(size),
        )
        if log.tree.root() != checkpoint.root_hash:
            raise LogCheckError(
                f"the {size} served entries do not hash to the checkpoint's root hash"
            )
        expected = log.tree.tiles()
        tiles = tiles_for_size(size)
        for tile in tiles:
            if _get(client, tile.path) != expected[(tile.level, tile.index)]:
                raise LogCheckError(f"{base}{tile.path} is not the tile of the served entries")
    if root is not None:
        _check_root(root, log.logged)
    return VerifiedLog(checkpoint, log.leaf_bytes, len(tiles))


def _check_root(root: Path, logged: LoggedLeaves) -> None:
    """Every revision file of ``root`` is an entry of the log with its digest, and back."""
    unseen = dict(logged)
    for file in scan_root(root):
        key = (str(file.coordinate), str(file.version))
        digest = unseen.pop(key, None)
        if digest is None:
            raise LogCheckError(f"{file.path}: this revision is not in the served log")
        if digest != hashlib.sha256(file.data).digest():
            raise LogCheckError(
                f"{file.path}: the served log holds other bytes for this revision "
                f"(sha256:{digest.hex()})"
            )
    if unseen:
        (coordinate, version), _ = min(unseen.items())
        raise LogCheckError(
            f"{len(unseen)} revision(s) of the served log have no file under {root}, "
            f"the first: {coordinate} {version}"
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
