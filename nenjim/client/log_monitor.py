"""``nenjim journal monitor``: follow a served transparency log, fetching only what is new.

The state directory keeps the last checkpoint verified (the signed note, file
``checkpoint``) and every tile of that tree, verified (``tile/<L>/<N>[.p/<W>]``,
the paths the log serves them at). A full tile never changes, and a partial
tile whose width did not change is the same tile, so the tiles of a grown tree
that differ from the stored tree's are exactly ``new_tiles(old, new)``: a run
fetches the checkpoint, those tiles and the entry bundles of the new entries
(the bundle the old tree ended inside included), nothing else.

A later run checks, in order: the checkpoint's signature (``BadCheckpointError``,
kind ``bad-signature``); its origin is the stored one (else the state is
foreign: ``MonitorStateError``); its size is not smaller (``LogRewrittenError``);
an equal size has the equal root (``LogForkedError``); then, for a larger tree,
the stored tiles and the fetched ones together hash to the new checkpoint's
root, the RFC 9162 consistency proof read from them leads from the stored
root to the new one and the fetched tiles agree with the stored tiles they
grew from (``LogForkedError``: the log is not an extension of the tree it
showed before); finally each fetched level 0 tile is the leaf hashes of its
entry bundle, and each hash of a fetched higher tile the head of the full
tile below it (``LogCheckError``). Writes happen only after every check held:
tiles first, each to a temporary file renamed into place, the checkpoint last,
so an interrupted run leaves the previous state whole.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from nenjim.client.log_client import get, open_served_checkpoint, verify_served
from nenjim.client.log_hashing import LogCheckError, hash_bundles
from nenjim.client.log_witnesses import WitnessPolicy
from nenjim.domain.transparency import (
    HASH_SIZE,
    TILE_WIDTH,
    Checkpoint,
    Tile,
    TileHashSource,
    TransparencyError,
    VerifierKey,
    consistency_proof,
    entry_bundles_for_size,
    new_tiles,
    open_checkpoint,
    root_hash,
    tile_hashes,
    tiles_for_size,
    tree_hash,
    verify_consistency,
)

__all__ = [
    "LogForkedError",
    "LogRewrittenError",
    "MonitorResult",
    "MonitorStateError",
    "monitor_log",
]

CHECKPOINT_FILE = "checkpoint"
TILE_DIR = "tile"
_TEMP_PREFIX = ".tmp-"

TileKey = tuple[int, int]


class MonitorStateError(Exception):
    """The state directory is not one this log's monitor wrote: unreadable, damaged, or of
    another log (another origin, another key). One line says why."""


class LogForkedError(LogCheckError):
    """The served tree is not an extension of the tree verified before."""


class LogRewrittenError(LogForkedError):
    """The served tree is smaller than the tree verified before."""


@dataclass(frozen=True, slots=True)
class MonitorResult:
    """What one round verified and what it cost."""

    checkpoint: Checkpoint
    previous_size: int | None
    new_entries: int
    fetched_tiles: int
    fetched_bundles: int
    requests: int


def monitor_log(
    url: str,
    verifier: VerifierKey,
    state: Path,
    *,
    timeout: float = 30.0,
    policy: WitnessPolicy | None = None,
) -> MonitorResult:
    """Verify what the log at ``url`` added since the checkpoint kept in ``state``; keep the new.

    Raises ``LogUnavailableError`` for an outage, ``LogForkedError`` (or
    ``LogRewrittenError``) for a log that does not extend the stored tree,
    ``BadCheckpointError`` for a checkpoint the key did not sign,
    ``LogCheckError`` for tiles or entries that do not verify, and
    ``MonitorStateError`` for a state directory that is not this log's, and
    ``WitnessPolicyError`` for a checkpoint without the cosignatures ``policy``
    requires. The
    state is only written when every check held.
    """
    stored = _load_state(state, verifier)
    requests = 0

    def count(_: httpx.Request) -> None:
        nonlocal requests
        requests += 1

    base = url.rstrip("/") + "/"
    with httpx.Client(base_url=base, timeout=timeout, event_hooks={"request": [count]}) as client:
        note = get(client, "checkpoint", committed=False)
        checkpoint = open_served_checkpoint(note, verifier, client, policy)
        if stored is None:
            verified, tiles = verify_served(client, verifier, checkpoint=checkpoint)
            _write_tiles(state, checkpoint.size, tiles)
            _write_file(state / CHECKPOINT_FILE, note)
            size = checkpoint.size
            bundles = len(entry_bundles_for_size(size))
            return MonitorResult(checkpoint, None, size, verified.tiles, bundles, requests)
        old, old_text = stored
        if checkpoint.origin != old.origin:
            raise MonitorStateError(
                f"{state} holds the state of log {old.origin!r}, not of {checkpoint.origin!r} "
                f"served at {base}"
            )
        grown, fetched_bundles = _check_growth(client, state, old, checkpoint)
        fetched_tiles = len(grown)
        if checkpoint.size != old.size:
            for tile, data in grown.items():
                _write_file(state / tile.path, data)
            _write_file(state / CHECKPOINT_FILE, note)
            _prune(state, old.size, checkpoint.size)
        elif note != old_text.encode("utf-8"):
            # The same tree, signed again (another timestamp or cosignature): keep the newest.
            _write_file(state / CHECKPOINT_FILE, note)
    return MonitorResult(
        checkpoint,
        old.size,
        checkpoint.size - old.size,
        fetched_tiles,
        fetched_bundles,
        requests,
    )


def _check_growth(
    client: httpx.Client, state: Path, old: Checkpoint, new: Checkpoint
) -> tuple[dict[Tile, bytes], int]:
    """Verify ``new`` extends ``old``, fetching what changed: the tiles fetched and the
    number of entry bundles."""
    base = str(client.base_url)
    if new.size < old.size:
        raise LogRewrittenError(
            f"the log shrank: the checkpoint verified before has {old.size} leaves, "
            f"the served one {new.size}"
        )
    if new.size == old.size:
        if new.root_hash != old.root_hash:
            raise LogForkedError(
                f"the served checkpoint has the size verified before, {old.size}, "
                "and another root hash"
            )
        return {}, 0
    changed = new_tiles(old.size, new.size)
    fetched: dict[TileKey, bytes] = {}
    for tile in changed:
        data = get(client, tile.path)
        try:
            tile_hashes(tile, data)
        except TransparencyError as error:
            raise LogCheckError(f"{base}{tile.path}: {error}") from None
        fetched[tile.level, tile.index] = data
    source = TileHashSource(new.size, _Tiles(state, fetched))
    try:
        if tree_hash(new.size, source) != new.root_hash:
            # The stored tiles and the new ones are not one tree: either the log forked
            # (the tiles it serves for the old tree are not those verified) or a new tile
            # is wrong. Read the tree's other tiles from the log too, to tell which.
            source = TileHashSource(new.size, _ServedTiles(client, fetched))
            if tree_hash(new.size, source) != new.root_hash:
                raise LogCheckError(
                    f"the served tiles of tree size {new.size} do not hash to the checkpoint's root"
                )
        proof = consistency_proof(old.size, new.size, source)
        verify_consistency(old.size, new.size, old.root_hash, new.root_hash, proof)
    except MonitorStateError:
        raise
    except TransparencyError as error:
        raise LogForkedError(
            f"the served tree of size {new.size} does not extend the tree of size "
            f"{old.size} verified before: {error}"
        ) from None
    _check_grown_tiles(state, old.size, changed, fetched)
    bundles = [b for b in entry_bundles_for_size(new.size) if b.index >= old.size // TILE_WIDTH]
    for bundle in bundles:
        hashed = hash_bundles([(get(client, bundle.path), bundle.width)], with_leaves=False)[0]
        if hashed.error is not None:
            raise LogCheckError(f"{base}{bundle.path}: {hashed.error}")
        if hashed.hashes != fetched[0, bundle.index]:
            raise LogCheckError(
                f"{base}{Tile(0, bundle.index, bundle.width).path} is not the "
                "tile of the served entries"
            )
    for tile in changed:
        if tile.level == 0:
            continue
        below = _Tiles(state, fetched)
        heads = [
            root_hash(tile_hashes(Tile(tile.level - 1, index), data))
            for index, data in zip(
                range(tile.index * TILE_WIDTH, tile.index * TILE_WIDTH + tile.width),
                below.read_tiles(
                    [
                        Tile(tile.level - 1, tile.index * TILE_WIDTH + offset)
                        for offset in range(tile.width)
                    ]
                ),
                strict=True,
            )
        ]
        if b"".join(heads) != fetched[tile.level, tile.index]:
            raise LogCheckError(f"{base}{tile.path} is not the tile of the tiles below it")
    return {tile: fetched[tile.level, tile.index] for tile in changed}, len(bundles)


def _check_grown_tiles(
    state: Path, old_size: int, changed: Sequence[Tile], fetched: dict[TileKey, bytes]
) -> None:
    """Every fetched tile that grew from a partial tile of the stored tree begins with it."""
    old_partial = {(t.level, t.index): t for t in tiles_for_size(old_size) if not t.is_full}
    for tile in changed:
        before = old_partial.get((tile.level, tile.index))
        if before is None:
            continue
        kept = _read_stored(state, before)
        if fetched[tile.level, tile.index][: len(kept)] != kept:
            raise LogForkedError(
                f"{tile.path} does not begin with {before.path} verified before: "
                "the log was rewritten"
            )


class _Tiles:
    """Tiles of the new tree: those fetched this round, else the stored (unchanged) ones."""

    def __init__(self, state: Path, fetched: dict[TileKey, bytes]) -> None:
        self._state = state
        self._fetched = fetched

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        return [
            self._fetched.get((tile.level, tile.index)) or _read_stored(self._state, tile)
            for tile in tiles
        ]


class _ServedTiles:
    """Tiles of the new tree as the log serves them: those fetched this round, else fetched."""

    def __init__(self, client: httpx.Client, fetched: dict[TileKey, bytes]) -> None:
        self._client = client
        self._fetched = dict(fetched)

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        for tile in tiles:
            if (tile.level, tile.index) not in self._fetched:
                self._fetched[tile.level, tile.index] = get(self._client, tile.path)
        return [self._fetched[tile.level, tile.index] for tile in tiles]


def _read_stored(state: Path, tile: Tile) -> bytes:
    try:
        data = (state / tile.path).read_bytes()
    except OSError as error:
        raise MonitorStateError(
            f"{state}: the stored tile {tile.path} cannot be read ({error.strerror}): "
            "the state is damaged"
        ) from None
    if len(data) != tile.width * HASH_SIZE:
        raise MonitorStateError(
            f"{state}: the stored tile {tile.path} has {len(data)} bytes: the state is damaged"
        )
    return data


def _load_state(state: Path, verifier: VerifierKey) -> tuple[Checkpoint, str] | None:
    """The stored checkpoint and its note, or None for a first run (no state yet)."""
    if state.exists() and not state.is_dir():
        raise MonitorStateError(f"{state} is not a directory")
    path = state / CHECKPOINT_FILE
    try:
        names = [n for n in os.listdir(state) if not n.startswith(_TEMP_PREFIX)]
    except FileNotFoundError:
        return None
    except OSError as error:
        raise MonitorStateError(
            f"cannot read the state directory {state}: {error.strerror}"
        ) from None
    if CHECKPOINT_FILE not in names:
        if set(names) - {TILE_DIR}:
            raise MonitorStateError(
                f"{state} is not a monitor's state directory (no {CHECKPOINT_FILE} file, "
                f"other files: {sorted(set(names) - {TILE_DIR})[0]})"
            )
        return None
    try:
        text = path.read_text(encoding="utf-8")
        checkpoint = open_checkpoint(text, [verifier])
    except (OSError, UnicodeDecodeError, TransparencyError) as error:
        detail = error.strerror if isinstance(error, OSError) else str(error)
        raise MonitorStateError(
            f"{path} is not a checkpoint of this log signed by the key given: {detail}"
        ) from None
    stored = TileHashSource(checkpoint.size, _Tiles(state, {}))
    if tree_hash(checkpoint.size, stored) != checkpoint.root_hash:
        raise MonitorStateError(
            f"{state}: the stored tiles do not hash to the stored checkpoint's root: "
            "the state is damaged"
        )
    return checkpoint, text


def _write_tiles(state: Path, size: int, tiles: dict[TileKey, bytes]) -> None:
    for tile in tiles_for_size(size):
        _write_file(state / tile.path, tiles[tile.level, tile.index])


def _prune(state: Path, old_size: int, new_size: int) -> None:
    """Remove the stored partial tiles the new tree replaced (after the checkpoint moved on)."""
    current = {tile.path for tile in tiles_for_size(new_size)}
    for tile in tiles_for_size(old_size):
        if not tile.is_full and tile.path not in current:
            (state / tile.path).unlink(missing_ok=True)


def _write_file(path: Path, data: bytes | str) -> None:
    """Write ``path`` atomically: a temporary file in its directory, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(raw)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
