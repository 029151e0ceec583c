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

A log that cannot be read (no answer, a timeout, HTTP 5xx, 408 or 429, or
no checkpoint at all) raises ``LogUnavailableError``: an outage. Anything
read that does not verify raises ``LogCheckError``: a checkpoint whose
signature fails, entries or tiles that are not the signed tree, a tree that
does not extend the trusted one, a tile the checkpoint covers that the
server refuses, files of the root that differ from the entries.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import httpx

from nenjim.admin.transparency import scan_root
from nenjim.client.log_hashing import (
    BadCheckpointError,
    LogCheckError,
    LoggedLeaves,
    LogUnavailableError,
    pool_workers,
    recompute_log,
)
from nenjim.client.log_witnesses import WitnessPolicy
from nenjim.domain.transparency import (
    Checkpoint,
    TransparencyError,
    VerifierKey,
    entry_bundles_for_size,
    open_checkpoint,
    tiles_for_size,
)

__all__ = [
    "BadCheckpointError",
    "LogCheckError",
    "LogUnavailableError",
    "VerifiedLog",
    "fetch_checkpoint",
    "get",
    "open_served_checkpoint",
    "verify_log",
    "verify_served",
]

_TRANSIENT = (httpx.codes.REQUEST_TIMEOUT, httpx.codes.TOO_MANY_REQUESTS)


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
    policy: WitnessPolicy | None = None,
) -> VerifiedLog:
    """Verify the log served at ``url`` (its base URL); raise ``LogCheckError`` unless it holds.

    ``root``: a local Journal root whose revision files must be exactly the
    log's entries (the Journal's errors name a root that cannot be read).
    ``policy``: the cosignatures the checkpoint needs (``WitnessPolicyError``).
    """
    base = url.rstrip("/") + "/"
    with httpx.Client(base_url=base, timeout=timeout) as client:
        checkpoint = fetch_checkpoint(client, verifier, policy)
        verified, _ = verify_served(client, verifier, since=since, root=root, checkpoint=checkpoint)
    return verified


def verify_served(
    client: httpx.Client,
    verifier: VerifierKey,
    *,
    since: Checkpoint | None = None,
    root: Path | None = None,
    checkpoint: Checkpoint | None = None,
) -> tuple[VerifiedLog, dict[tuple[int, int], bytes]]:
    """``verify_log`` with an open ``client`` (its base URL the log's); also every verified
    tile's bytes by ``(level, index)`` (what ``nenjim journal monitor`` keeps).

    ``checkpoint``: the served checkpoint, already fetched and opened with ``verifier``.
    """
    base = str(client.base_url)
    if checkpoint is None:
        checkpoint = fetch_checkpoint(client, verifier)
    size = checkpoint.size
    if since is not None and since.size > size:
        raise LogCheckError(
            f"the log shrank: the checkpoint trusted before has {since.size} leaves, "
            f"this one {size}"
        )
    fetched = ((bundle, get(client, bundle.path)) for bundle in entry_bundles_for_size(size))
    log = recompute_log(
        fetched,
        since=since,
        with_leaves=root is not None,
        where=base,
        workers=pool_workers(size),
    )
    if log.tree.root() != checkpoint.root_hash:
        raise LogCheckError(f"the {size} served entries do not hash to the checkpoint's root hash")
    expected = log.tree.tiles()
    tiles = tiles_for_size(size)
    for tile in tiles:
        if get(client, tile.path) != expected[(tile.level, tile.index)]:
            raise LogCheckError(f"{base}{tile.path} is not the tile of the served entries")
    if root is not None:
        _check_root(root, log.logged)
    return VerifiedLog(checkpoint, log.leaf_bytes, len(tiles)), expected


def fetch_checkpoint(
    client: httpx.Client, verifier: VerifierKey, policy: WitnessPolicy | None = None
) -> Checkpoint:
    """The served checkpoint, its signature (and with ``policy`` its cosignatures) checked
    (``BadCheckpointError`` unless they hold)."""
    note = get(client, "checkpoint", committed=False)
    return open_served_checkpoint(note, verifier, client, policy)


def open_served_checkpoint(
    note: bytes,
    verifier: VerifierKey,
    client: httpx.Client,
    policy: WitnessPolicy | None = None,
) -> Checkpoint:
    """The checkpoint in the served ``note``, its signature checked (``BadCheckpointError``),
    and with ``policy`` its cosignatures (``WitnessPolicyError``)."""
    where = f"{client.base_url}checkpoint"
    try:
        text = note.decode("utf-8")
        checkpoint = open_checkpoint(text, [verifier])
    except (TransparencyError, UnicodeDecodeError) as error:
        raise BadCheckpointError(f"{where}: {error}") from None
    if policy is not None:
        policy.check(text, verifier, where)
    return checkpoint


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


def get(client: httpx.Client, path: str, *, committed: bool = True) -> bytes:
    """The body of ``path``. ``committed``: the verified checkpoint commits the log to
    serving it, so a refusal (a 4xx other than 408 and 429) is the log's failure, not an
    outage."""
    where = f"{client.base_url}{path}"
    try:
        response = client.get(path)
    except httpx.HTTPError as error:
        reason = str(error) or type(error).__name__
        raise LogUnavailableError(f"cannot fetch {where}: {reason}") from None
    status = response.status_code
    if status == httpx.codes.OK:
        return response.content
    answer = f"{where}: HTTP {status} {response.reason_phrase}"
    if not committed or status >= 500 or status in _TRANSIENT:
        raise LogUnavailableError(answer)
    raise LogCheckError(f"{answer}, though the signed checkpoint covers it")
