"""C2SP tlog-tiles: paths, the tiles of a tree, tile bytes, proofs from tiles, entry bundles.

Examples from the C2SP tlog-tiles specification (index 1234067 is
``x001/x234/067``; a tree of 70,000 leaves has 273 full level 0 tiles, a
level 0 tile of width 112, a full level 1 tile, a level 1 tile of width 17 and
a level 2 tile of width 1; a tree of 256 leaves has ``tile/1/000.p/1``), and
the index encodings of golang.org/x/mod/sumdb/tlog ``tlog_test.go``
(``tilePaths``, ``TestTilePath``), whose paths carry the tile height that
C2SP paths drop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nenjim.domain.transparency import (
    TILE_WIDTH,
    EntryBundle,
    HashSourceError,
    InvalidEntryBundleError,
    InvalidTileError,
    InvalidTilePathError,
    MemoryTree,
    Tile,
    TileHashSource,
    TileTree,
    TreeNode,
    consistency_proof,
    decode_entry_bundle,
    encode_entry_bundle,
    entry_bundles_for_size,
    inclusion_proof,
    leaf_hashes,
    leaf_tile,
    new_tiles,
    node_hash_from_tile,
    parse_entry_bundle_path,
    parse_tile_path,
    read_tile,
    tile_data,
    tile_for_node,
    tile_hashes,
    tiles_for_size,
    tree_hash,
)


@pytest.mark.parametrize(
    ("tile", "path"),
    [
        (Tile(0, 5), "tile/0/005"),
        (Tile(0, 0), "tile/0/000"),
        (Tile(1, 1234), "tile/1/x001/234"),
        (Tile(2, 1234067), "tile/2/x001/x234/067"),
        (Tile(0, 1000), "tile/0/x001/000"),
        (Tile(63, 999, 255), "tile/63/999.p/255"),
        (Tile(0, 0, 1), "tile/0/000.p/1"),
        # tlog_test.go tilePaths: N = 1, 123456078 and 3057500.
        (Tile(0, 1), "tile/0/001"),
        (Tile(0, 1, 5), "tile/0/001.p/5"),
        (Tile(5, 123456078), "tile/5/x123/x456/078"),
        (Tile(5, 123456078, 2), "tile/5/x123/x456/078.p/2"),
        (Tile(0, 3057500, 2), "tile/0/x003/x057/500.p/2"),
    ],
)
def test_tile_paths_round_trip(tile: Tile, path: str) -> None:
    assert tile.path == path
    assert parse_tile_path(path) == tile


@pytest.mark.parametrize(
    ("bundle", "path"),
    [
        (EntryBundle(5), "tile/entries/005"),
        (EntryBundle(1234067), "tile/entries/x001/x234/067"),
        (EntryBundle(273, 112), "tile/entries/273.p/112"),
    ],
)
def test_entry_bundle_paths_round_trip(bundle: EntryBundle, path: str) -> None:
    assert bundle.path == path
    assert parse_entry_bundle_path(path) == bundle


@pytest.mark.parametrize(
    "path",
    [
        "tile/3/5/123/456/078",  # tlog_test.go: a group without its x
        "tile/8/0/001",  # Go's path with the height, not C2SP's
        "tile/1/data/x003/x057/500",  # Go's data tiles are not C2SP
        "tile/0/5",
        "tile/0/0005",
        "tile/0/x000/005",  # a leading zero group
        "tile/0/x001",  # x on the last group
        "tile/0/001/234",  # no x on an inner group
        "tile/00/000",  # leading zero in the level
        "tile/01/000",
        "tile/64/000",  # levels stop at 63
        "tile/-1/000",
        "tile/0/000.p/0",
        "tile/0/000.p/256",  # a full tile has no .p suffix
        "tile/0/000.p/300",
        "tile/0/000.p/05",
        "tile/0/000.p/",
        "tile/0/000.p",
        "tile/0/000/",
        "/tile/0/000",
        "tile/0/000\n",
        "tile/0/\u0661\u0662\u0663",  # non-ASCII digits
        "tile/\u0660/000",
        "tile/0/+01",
        "tile/0/ 01",
        "tile/entries/000",
        "tile//000",
        "tiles/0/000",
        "",
    ],
)
def test_malformed_tile_paths_are_refused(
    path: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidTilePathError) as caught:
        parse_tile_path(path)
    assert repr(path) in one_line(caught.value)


@pytest.mark.parametrize(
    "path",
    [
        "tile/entries/5",
        "tile/entries/x000/005",
        "tile/entries/000.p/256",
        "tile/entries/000.p/0",
        "tile/entries/000\n",
        "tile/0/000",
        "tile/entry/000",
        "tile/entries/",
    ],
)
def test_malformed_entry_bundle_paths_are_refused(
    path: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidTilePathError) as caught:
        parse_entry_bundle_path(path)
    assert repr(path) in one_line(caught.value)


@settings(max_examples=300, deadline=None)
@given(
    level=st.integers(0, 63),
    index=st.one_of(st.integers(0, 2000), st.integers(0, 10**30)),
    width=st.integers(1, TILE_WIDTH),
)
def test_every_tile_path_round_trips(level: int, index: int, width: int) -> None:
    tile = Tile(level, index, width)
    assert parse_tile_path(tile.path) == tile
    bundle = EntryBundle(index, width)
    assert parse_entry_bundle_path(bundle.path) == bundle


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: Tile(64, 0), "level 64"),
        (lambda: Tile(-1, 0), "level -1"),
        (lambda: Tile(0, -1), "index -1"),
        (lambda: Tile(0, 0, 0), "width 0"),
        (lambda: Tile(0, 0, 257), "width 257"),
        (lambda: EntryBundle(-1), "index -1"),
        (lambda: EntryBundle(0, 0), "width 0"),
    ],
)
def test_impossible_tile_coordinates_are_refused(
    make: Callable[[], object], reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidTileError) as caught:
        make()
    assert reason in one_line(caught.value)


def test_tiles_of_256_leaves() -> None:
    assert [tile.path for tile in tiles_for_size(256)] == ["tile/0/000", "tile/1/000.p/1"]


def test_tiles_of_70000_leaves() -> None:
    paths = [tile.path for tile in tiles_for_size(70_000)]
    full_level_0 = [Tile(0, index).path for index in range(273)]
    assert paths == [
        *full_level_0,
        "tile/0/273.p/112",
        "tile/1/000",
        "tile/1/001.p/17",
        "tile/2/000.p/1",
    ]
    assert full_level_0[0] == "tile/0/000"
    assert full_level_0[-1] == "tile/0/272"


@pytest.mark.parametrize(
    ("size", "paths"),
    [
        (0, []),
        (1, ["tile/0/000.p/1"]),
        (255, ["tile/0/000.p/255"]),
        (257, ["tile/0/000", "tile/0/001.p/1", "tile/1/000.p/1"]),
        (65536, [*(Tile(0, i).path for i in range(256)), "tile/1/000", "tile/2/000.p/1"]),
    ],
)
def test_tiles_at_the_edges(size: int, paths: list[str]) -> None:
    assert [tile.path for tile in tiles_for_size(size)] == paths


def test_each_partial_tile_width_is_the_spec_formula() -> None:
    # The partial tile at level l of a tree of size s has floor(s / 256**l) mod 256 hashes.
    for size in (1, 255, 256, 257, 70_000, 1_048_577, 1_114_111):
        partial = {tile.level: tile.width for tile in tiles_for_size(size) if not tile.is_full}
        level = 0
        while size >> (8 * level):
            width = (size // 256**level) % 256
            assert partial.get(level) == (width or None)
            level += 1


@settings(max_examples=200, deadline=None)
@given(old=st.integers(0, 300_000), grow=st.integers(0, 300_000))
def test_new_tiles_are_exactly_the_tiles_the_old_tree_lacks(old: int, grow: int) -> None:
    new = old + grow
    assert set(new_tiles(old, new)) == set(tiles_for_size(new)) - set(tiles_for_size(old))


def test_new_tiles_refuses_a_shrinking_tree(one_line: Callable[[BaseException], str]) -> None:
    with pytest.raises(InvalidTileError) as caught:
        new_tiles(10, 9)
    assert "tree size 9 is smaller than tree size 10" in one_line(caught.value)
    with pytest.raises(InvalidTileError):
        tiles_for_size(-1)


def test_entry_bundles_of_a_tree() -> None:
    assert [b.path for b in entry_bundles_for_size(70_000)][-2:] == [
        "tile/entries/272",
        "tile/entries/273.p/112",
    ]
    assert entry_bundles_for_size(512) == [EntryBundle(0), EntryBundle(1)]
    assert entry_bundles_for_size(0) == []


SIZE = 70_000


@pytest.fixture(scope="module")
def tree() -> MemoryTree:
    return MemoryTree(b"%d" % i for i in range(SIZE))


class StoredTiles:
    """A tile store in memory: the tiles of one tree size, as a server keeps them."""

    def __init__(self, tree: MemoryTree, size: int) -> None:
        self.tiles = {tile: read_tile(tile, tree) for tile in tiles_for_size(size)}
        self.calls = 0

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        self.calls += 1
        # A partial tile that has since become full is answered with the full tile.
        return [self.tiles.get(tile) or self.tiles[Tile(tile.level, tile.index)] for tile in tiles]


def test_tile_bytes_are_the_node_hashes_in_order(tree: MemoryTree) -> None:
    level_1 = read_tile(Tile(1, 1, 17), tree)
    assert len(level_1) == 17 * 32
    # Level 1 hash i of tile 1 is the head of level 0 tile 256 + i.
    assert level_1[:32] == tree_hash(256, MemoryTree(b"%d" % i for i in range(65536, 65792)))
    level_0 = tile_hashes(Tile(0, 0), read_tile(Tile(0, 0), tree))
    assert level_0 == leaf_hashes(b"%d" % i for i in range(256))
    assert tile_data(level_0) == read_tile(Tile(0, 0), tree)


def test_every_node_reads_back_from_its_tile(tree: MemoryTree) -> None:
    size = 70_000
    stored = StoredTiles(tree, size)
    for level in range(17):
        count = size >> level
        for index in {i for i in (0, 1, count // 2, count - 1) if i < count}:
            node = TreeNode(level, index)
            tile = tile_for_node(node, size)
            assert tile in stored.tiles
            from_tile = node_hash_from_tile(tile, stored.tiles[tile], node)
            assert from_tile == tree.node_hashes([node])[0]


def test_proofs_from_tiles_equal_proofs_from_the_tree(tree: MemoryTree) -> None:
    stored = StoredTiles(tree, SIZE)
    source = TileHashSource(SIZE, stored)
    assert tree_hash(SIZE, source) == tree.root()
    for index in (0, 255, 256, 65535, 65536, 69_887, 69_888, SIZE - 1):
        assert inclusion_proof(index, SIZE, source) == inclusion_proof(index, SIZE, tree)
    for old in (1, 256, 1000, 65536, 69_999):
        assert consistency_proof(old, SIZE, source) == consistency_proof(old, SIZE, tree)
    # One read per request, of O(log n) tiles.
    calls = stored.calls
    inclusion_proof(12_345, SIZE, source)
    assert stored.calls == calls + 1


def test_a_full_tile_stands_in_for_the_partial_it_replaced(tree: MemoryTree) -> None:
    # The tree had 1,000 leaves; the store now holds the tiles of 70,000.
    stored = StoredTiles(tree, SIZE)
    old = MemoryTree(b"%d" % i for i in range(1000))
    assert tree_hash(1000, TileHashSource(1000, stored)) == old.root()
    assert inclusion_proof(999, 1000, TileHashSource(1000, stored)) == inclusion_proof(
        999, 1000, old
    )


def test_tile_bytes_of_the_wrong_size_are_refused(one_line: Callable[[BaseException], str]) -> None:
    with pytest.raises(InvalidTileError) as caught:
        tile_hashes(Tile(0, 0, 2), b"\x00" * 65)
    assert "tile/0/000.p/2: 65 bytes, expected 64" in one_line(caught.value)

    class Short:
        def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
            return [b"\x00" * 32 for _ in tiles]

    with pytest.raises(InvalidTileError) as caught:
        tree_hash(3, TileHashSource(3, Short()))
    assert "tile/0/000.p/3: 32 bytes, expected 96" in one_line(caught.value)

    class Missing:
        def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
            return []

    with pytest.raises(HashSourceError) as caught:
        tree_hash(3, TileHashSource(3, Missing()))
    assert "0 tiles for 1" in one_line(caught.value)


def test_tile_data_needs_1_to_256_hashes_of_32_bytes(
    one_line: Callable[[BaseException], str],
) -> None:
    for hashes, reason in (
        ([], "width 0"),
        ([b"\x00" * 32] * 257, "width 257"),
        ([b"\x00" * 32, b"\x00" * 31], "hash 1 is 31 bytes"),
    ):
        with pytest.raises(InvalidTileError) as caught:
            tile_data(hashes)
        assert reason in one_line(caught.value)


def test_nodes_outside_the_tree_or_tile_are_refused(
    tree: MemoryTree, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(HashSourceError) as caught:
        tile_for_node(TreeNode(8, 273), SIZE)
    assert "not a complete subtree of the tree of size 70000" in one_line(caught.value)
    data = read_tile(Tile(0, 0), tree)
    with pytest.raises(InvalidTileError) as caught:
        node_hash_from_tile(Tile(0, 0), data, TreeNode(0, 256))
    assert "tile/0/000 does not hold node (level 0, index 256)" in one_line(caught.value)
    with pytest.raises(InvalidTileError):
        node_hash_from_tile(Tile(0, 0), data, TreeNode(8, 0))


def test_entry_bundles_round_trip() -> None:
    entries = [b"", b"a", b"x" * 65535, "caf\u00e9\n".encode()]
    data = encode_entry_bundle(entries)
    assert data[:2] == b"\x00\x00"
    assert data[2:5] == b"\x00\x01a"
    assert data[5:7] == b"\xff\xff"
    assert decode_entry_bundle(data) == entries
    assert decode_entry_bundle(data, width=4) == entries


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=TILE_WIDTH))
def test_every_bundle_round_trips(entries: list[bytes]) -> None:
    assert decode_entry_bundle(encode_entry_bundle(entries), width=len(entries)) == entries


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        ([b"x" * 65536], "entry 0 is 65536 bytes"),
        ([], "1 to 256 entries, not 0"),
        ([b""] * 257, "1 to 256 entries, not 257"),
    ],
)
def test_unbundleable_entries_are_refused(
    entries: list[bytes], reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidEntryBundleError) as caught:
        encode_entry_bundle(entries)
    assert reason in one_line(caught.value)


@pytest.mark.parametrize(
    ("data", "width", "reason"),
    [
        (b"", None, "0 entries, expected at least 1"),
        (b"\x00", None, "truncated length at byte 0"),
        (b"\x00\x01ab", None, "truncated length at byte 3"),
        (b"\x00\x03ab", None, "claims 3 bytes, 2 remain"),
        (b"\x00\x01a", 2, "1 entries, expected 2"),
        (b"\x00\x00" * 257, None, "more than 256 entries"),
    ],
)
def test_malformed_bundles_are_refused(
    data: bytes, width: int | None, reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidEntryBundleError) as caught:
        decode_entry_bundle(data, width)
    assert reason in one_line(caught.value)


def test_a_leaf_tile_is_the_tiles_hashes_and_the_head_of_its_256_leaves(
    one_line: Callable[[BaseException], str],
) -> None:
    entries = [b"leaf %d" % i for i in range(TILE_WIDTH)]
    tile = leaf_tile(entries)
    tree = MemoryTree(entries)
    assert tile.data == read_tile(Tile(0, 0), tree)
    assert tile.head == tree.root()
    with pytest.raises(InvalidTileError) as caught:
        leaf_tile(entries[:-1])
    assert one_line(caught.value) == "a full leaf tile has 256 entries, not 255"


def test_a_tile_tree_refuses_a_leaf_tile_of_the_wrong_size_and_keeps_its_state(
    one_line: Callable[[BaseException], str],
) -> None:
    entries = [b"leaf %d" % i for i in range(TILE_WIDTH)]
    tree = TileTree()
    tree.append_leaf_tiles([leaf_tile(entries)])
    good = leaf_tile(entries)
    with pytest.raises(InvalidTileError) as caught:
        tree.append_leaf_tiles([good, good._replace(data=good.data[:-1])])
    assert one_line(caught.value).startswith("tile/0/002: 8191 bytes, expected 8192")
    assert tree.size == TILE_WIDTH
    assert tree.tiles() == {(0, 0): good.data, (1, 0): good.head}
