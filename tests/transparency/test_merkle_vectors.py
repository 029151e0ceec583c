"""Merkle tree heads and proofs against the published RFC 6962 test vectors.

The eight-leaf reference tree, its heads, audit paths and consistency proofs
are copied from Certificate Transparency's C++ test,
google/certificate-transparency ``cpp/merkletree/merkle_tree_test.cc``
(``kInputs``, ``kSHA256Roots``, ``kSHA256Paths``, ``kSHA256Proofs``, used by
``MerkleTreeTest.RootTestVectors``, ``PathTestVectors``,
``ConsistencyTestVectors`` and ``MerkleVerifierTest``), the same vectors as
transparency-dev/merkle ``proof/verify_test.go``. The hasher vectors are from
transparency-dev/merkle ``rfc6962/rfc6962_test.go`` (``TestRFC6962Hasher``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from nenjim.domain.transparency import (
    EMPTY_ROOT,
    HashSourceError,
    InvalidHashError,
    InvalidProofError,
    InvalidProofRequestError,
    MemoryTree,
    TreeBuilder,
    TreeNode,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_from_inclusion_proof,
    root_hash,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)

# merkle_tree_test.cc: kInputs (the reference tree's eight leaves).
INPUTS = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]

# merkle_tree_test.cc: kSHA256Roots (head of the first i+1 leaves).
ROOTS = [
    bytes.fromhex(h)
    for h in (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    )
]

# merkle_tree_test.cc: kSHA256EmptyTreeHash.
EMPTY_TREE_HASH = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

# merkle_tree_test.cc: kSHA256Paths, as (1-based leaf, tree size, audit path).
PATHS = [
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (3, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        2,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]

# merkle_tree_test.cc: kSHA256Proofs, as (old size, new size, consistency proof).
PROOFS = [
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
# transparency-dev/merkle proof/verify_test.go adds this one to the C++ set.
PROOFS.append(
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    )
)

# verify_test.go: sha256SomeHash, a well-formed hash that is no node of the tree.
SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")


def _hashes(hexes: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in hexes]


@pytest.fixture(scope="module")
def tree() -> MemoryTree:
    return MemoryTree(INPUTS)


def test_rfc6962_hasher_vectors() -> None:
    # rfc6962_test.go TestRFC6962Hasher.
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert EMPTY_ROOT == EMPTY_TREE_HASH
    assert leaf_hash(b"").hex() == (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    )
    assert leaf_hash(b"L123456").hex() == (
        "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56"
    )
    assert node_hash(b"N123", b"N456").hex() == (
        "aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb"
    )


def test_go_tlog_record_hash_vector() -> None:
    # golang.org/x/mod/sumdb/tlog note_test.go TestFormatTree: RecordHash("hello world").
    expected = "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0="
    assert base64.b64encode(leaf_hash(b"hello world")).decode() == expected


def test_empty_tree_head_is_sha256_of_nothing_not_zeros(tree: MemoryTree) -> None:
    assert tree_hash(0, tree) == EMPTY_TREE_HASH
    assert TreeBuilder().root() == EMPTY_TREE_HASH
    assert root_hash([]) == EMPTY_TREE_HASH
    assert bytes(32) != EMPTY_TREE_HASH


@pytest.mark.parametrize("size", range(1, 9))
def test_tree_heads_match_the_reference_roots(tree: MemoryTree, size: int) -> None:
    assert tree_hash(size, tree) == ROOTS[size - 1]
    assert root_hash(leaf_hash(data) for data in INPUTS[:size]) == ROOTS[size - 1]


def test_builder_gives_every_intermediate_root_leaf_by_leaf() -> None:
    builder = TreeBuilder()
    for size, data in enumerate(INPUTS, start=1):
        builder.append([leaf_hash(data)])
        assert builder.size == size
        assert builder.root() == ROOTS[size - 1]


def test_builder_in_two_chunks_matches() -> None:
    # MerkleTreeTest.RootTestVectors "third tree": three leaves, then five.
    builder = TreeBuilder()
    builder.append([leaf_hash(data) for data in INPUTS[:3]])
    assert builder.root() == ROOTS[2]
    builder.append([leaf_hash(data) for data in INPUTS[3:]])
    assert builder.root() == ROOTS[7]


@pytest.mark.parametrize(("leaf", "size", "path"), [*PATHS[1:], PATHS[0]])
def test_audit_paths_match_the_reference(
    tree: MemoryTree, leaf: int, size: int, path: list[str]
) -> None:
    proof = inclusion_proof(leaf - 1, size, tree)
    assert proof == _hashes(path)
    leaf_value = leaf_hash(INPUTS[leaf - 1])
    assert root_from_inclusion_proof(leaf_value, leaf - 1, size, proof) == ROOTS[size - 1]
    verify_inclusion(leaf_value, leaf - 1, size, proof, ROOTS[size - 1])


@pytest.mark.parametrize(("old", "new", "proof"), PROOFS)
def test_consistency_proofs_match_the_reference(
    tree: MemoryTree, old: int, new: int, proof: list[str]
) -> None:
    assert consistency_proof(old, new, tree) == _hashes(proof)
    verify_consistency(old, new, ROOTS[old - 1], ROOTS[new - 1], _hashes(proof))


def _inclusion_probes(
    leaf: int, size: int, proof: list[bytes], root: bytes, value: bytes
) -> dict[str, tuple[int, int, list[bytes], bytes, bytes]]:
    """MerkleVerifierTest.VerifierCheck / verify_test.go corruptInclusionProof."""
    probes = {
        "leaf index - 1": (leaf - 1, size, proof, root, value),
        "leaf index + 1": (leaf + 1, size, proof, root, value),
        "leaf index ^ 2": (leaf ^ 2, size, proof, root, value),
        "tree size * 2": (leaf, size * 2, proof, root, value),
        "tree size / 2": (leaf, size // 2, proof, root, value),
        "wrong leaf": (leaf, size, proof, root, leaf_hash(b"WrongLeaf")),
        "empty root": (leaf, size, proof, EMPTY_TREE_HASH, value),
        "random root": (leaf, size, proof, SOME_HASH, value),
        "trailing garbage": (leaf, size, [*proof, b""], root, value),
        "trailing root": (leaf, size, [*proof, root], root, value),
        "preceding garbage": (leaf, size, [b"", *proof], root, value),
        "preceding root": (leaf, size, [root, *proof], root, value),
    }
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([flipped[i][0] ^ 8]) + flipped[i][1:]
        probes[f"modified proof[{i}] bit 3"] = (leaf, size, flipped, root, value)
        replaced = list(proof)
        replaced[i] = EMPTY_TREE_HASH
        probes[f"proof[{i}] replaced"] = (leaf, size, replaced, root, value)
    if proof:
        probes["removed component"] = (leaf, size, proof[:-1], root, value)
    if len(proof) > 1:
        probes["inserted component"] = (leaf, size, [proof[0], SOME_HASH, *proof[1:]], root, value)
    return probes


@pytest.mark.parametrize(("leaf", "size", "path"), PATHS[1:])
def test_corrupted_audit_paths_fail(
    leaf: int, size: int, path: list[str], one_line: Callable[[BaseException], str]
) -> None:
    root, value = ROOTS[size - 1], leaf_hash(INPUTS[leaf - 1])
    probes = _inclusion_probes(leaf - 1, size, _hashes(path), root, value)
    accepted = []
    for description, (index, tree_size, proof, probe_root, probe_leaf) in probes.items():
        try:
            verify_inclusion(probe_leaf, index, tree_size, proof, probe_root)
        except InvalidProofError as error:
            one_line(error)
        else:
            accepted.append(description)
    assert accepted == []


def _consistency_probes(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> dict[str, tuple[int, int, bytes, bytes, list[bytes]]]:
    """MerkleVerifierTest.VerifierConsistencyCheck / verify_test.go corruptConsistencyProof."""
    probes = {
        "old size - 1": (old - 1, new, old_root, new_root, proof),
        "old size + 1": (old + 1, new, old_root, new_root, proof),
        "old size ^ 2": (old ^ 2, new, old_root, new_root, proof),
        "new size * 2": (old, new * 2, old_root, new_root, proof),
        "new size / 2": (old, new // 2, old_root, new_root, proof),
        "wrong old root": (old, new, b"WrongRoot", new_root, proof),
        "wrong new root": (old, new, old_root, b"WrongRoot", proof),
        "swapped roots": (old, new, new_root, old_root, proof),
        "empty proof": (old, new, old_root, new_root, []),
        "trailing garbage": (old, new, old_root, new_root, [*proof, b""]),
        "trailing old root": (old, new, old_root, new_root, [*proof, old_root]),
        "trailing new root": (old, new, old_root, new_root, [*proof, new_root]),
        "trailing last hash": (old, new, old_root, new_root, [*proof, proof[-1]]),
        "preceding garbage": (old, new, old_root, new_root, [b"", *proof]),
        "preceding old root": (old, new, old_root, new_root, [old_root, *proof]),
        "preceding new root": (old, new, old_root, new_root, [new_root, *proof]),
        "preceding proof[0]": (old, new, old_root, new_root, [proof[0], *proof]),
        "truncated proof": (old, new, old_root, new_root, proof[:-1]),
    }
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([flipped[i][0] ^ 16]) + flipped[i][1:]
        probes[f"modified proof[{i}] bit 4"] = (old, new, old_root, new_root, flipped)
    return probes


@pytest.mark.parametrize(("old", "new", "proof"), [p for p in PROOFS if p[2]])
def test_corrupted_consistency_proofs_fail(
    old: int, new: int, proof: list[str], one_line: Callable[[BaseException], str]
) -> None:
    probes = _consistency_probes(old, new, ROOTS[old - 1], ROOTS[new - 1], _hashes(proof))
    accepted = []
    for description, (old_size, new_size, old_root, new_root, probe) in probes.items():
        try:
            verify_consistency(old_size, new_size, old_root, new_root, probe)
        except InvalidProofError as error:
            one_line(error)
        else:
            accepted.append(description)
    assert accepted == []


@pytest.mark.parametrize(("index", "size"), [(0, 0), (0, 1), (1, 0), (2, 1)])
def test_inclusion_in_impossible_positions_fails(index: int, size: int) -> None:
    # MerkleVerifierTest.VerifyPath "various invalid paths" / verify_test.go TestVerifyInclusion:
    # never verifies, whatever the root or leaf.
    for leaf, root in ((SOME_HASH, b""), (b"", EMPTY_TREE_HASH), (SOME_HASH, EMPTY_TREE_HASH)):
        with pytest.raises(InvalidProofError):
            verify_inclusion(leaf, index, size, [], root)


def test_single_leaf_tree_root_is_the_leaf_hash() -> None:
    # verify_test.go TestVerifyInclusionSingleEntry.
    value = leaf_hash(b"data")
    verify_inclusion(value, 0, 1, [], value)
    for leaf, root in ((value, b""), (b"", value), (b"", b"")):
        with pytest.raises(InvalidProofError):
            verify_inclusion(leaf, 0, 1, [], root)


def test_trivial_consistency() -> None:
    # verify_test.go TestVerifyConsistency: equal sizes need equal roots and no
    # proof; the empty tree is a prefix of every tree.
    verify_consistency(0, 0, EMPTY_TREE_HASH, EMPTY_TREE_HASH, [])
    verify_consistency(0, 1, EMPTY_TREE_HASH, ROOTS[0], [])
    verify_consistency(1, 1, ROOTS[0], ROOTS[0], [])
    verify_consistency(0, 8, EMPTY_TREE_HASH, ROOTS[7], [])


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ((1, 0, ROOTS[0], EMPTY_TREE_HASH, []), "0 <= old <= new"),
        ((2, 1, ROOTS[1], ROOTS[0], []), "0 <= old <= new"),
        ((1, 2, ROOTS[0], ROOTS[1], []), "needs exactly 1"),
        ((0, 0, EMPTY_TREE_HASH, ROOTS[0], []), "different root"),
        ((1, 1, ROOTS[0], ROOTS[1], []), "different root"),
        ((0, 0, EMPTY_TREE_HASH, EMPTY_TREE_HASH, [EMPTY_TREE_HASH]), "needs exactly 0"),
        ((0, 1, EMPTY_TREE_HASH, ROOTS[0], [EMPTY_TREE_HASH]), "needs exactly 0"),
        ((1, 1, ROOTS[0], ROOTS[0], [EMPTY_TREE_HASH]), "needs exactly 0"),
        ((0, 1, ROOTS[0], ROOTS[0], []), "not the empty tree's head"),
        ((1, 1, b"short", b"short", []), "old root hash is 5 bytes"),
    ],
)
def test_trivial_consistency_failures(
    case: tuple[int, int, bytes, bytes, list[bytes]],
    reason: str,
    one_line: Callable[[BaseException], str],
) -> None:
    with pytest.raises(InvalidProofError) as caught:
        verify_consistency(*case)
    assert reason in one_line(caught.value)


def test_proof_requests_outside_the_tree_are_refused(
    tree: MemoryTree, one_line: Callable[[BaseException], str]
) -> None:
    for index, size in ((8, 8), (-1, 8), (0, 0)):
        with pytest.raises(InvalidProofRequestError) as caught:
            inclusion_proof(index, size, tree)
        assert f"leaf {index}" in one_line(caught.value)
    for old, new in ((3, 2), (-1, 4)):
        with pytest.raises(InvalidProofRequestError):
            consistency_proof(old, new, tree)
    with pytest.raises(InvalidProofRequestError):
        tree_hash(-1, tree)


def test_nodes_beyond_the_stored_tree_are_a_source_error(
    tree: MemoryTree, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(HashSourceError) as caught:
        inclusion_proof(0, 9, tree)
    assert "not a complete subtree of the tree of size 8" in one_line(caught.value)


class _LyingSource:
    def __init__(self, answer: list[bytes]) -> None:
        self.answer = answer

    def node_hashes(self, nodes: list[TreeNode]) -> list[bytes]:
        return self.answer


def test_a_source_answering_wrong_counts_or_sizes_is_refused(
    one_line: Callable[[BaseException], str],
) -> None:
    with pytest.raises(HashSourceError) as caught:
        tree_hash(3, _LyingSource([EMPTY_ROOT]))
    assert "1 hashes for 2 requested nodes" in one_line(caught.value)
    with pytest.raises(HashSourceError) as caught:
        tree_hash(4, _LyingSource([b"x" * 31]))
    assert "31-byte value for node (level 2, index 0)" in one_line(caught.value)


def test_builder_refuses_hashes_of_the_wrong_size_and_keeps_its_state(
    one_line: Callable[[BaseException], str],
) -> None:
    builder = TreeBuilder()
    builder.append([leaf_hash(INPUTS[0])])
    with pytest.raises(InvalidHashError) as caught:
        builder.append([leaf_hash(INPUTS[1]), b"short"])
    assert "leaf hash 1 of the 2 appended is 5 bytes" in one_line(caught.value)
    assert builder.size == 1
    assert builder.root() == ROOTS[0]


def test_builder_appends_subtree_heads_only_at_their_boundaries(
    one_line: Callable[[BaseException], str],
) -> None:
    builder = TreeBuilder()
    builder.append([leaf_hash(INPUTS[0])])
    with pytest.raises(InvalidProofRequestError) as caught:
        builder.append_subtrees(1, [ROOTS[1]])
    assert one_line(caught.value) == (
        "cannot append level 1 subtrees to a tree of 1 leaves: its size is not a multiple of 2"
    )
    with pytest.raises(InvalidProofRequestError) as caught:
        builder.append_subtrees(-1, [ROOTS[1]])
    assert "subtree level -1 is negative" in one_line(caught.value)
    builder.append([leaf_hash(INPUTS[1])])
    with pytest.raises(InvalidHashError) as caught:
        builder.append_subtrees(1, [b"short"])
    assert "level 1 subtree head 0 of the 1 appended is 5 bytes" in one_line(caught.value)
    assert builder.size == 2
    # The head of leaves 2 and 3, appended whole, gives the tree of all four.
    other = TreeBuilder()
    other.append([leaf_hash(data) for data in INPUTS[2:4]])
    runs = builder.append_subtrees(1, [other.root()])
    assert (builder.size, builder.root()) == (4, ROOTS[3])
    assert [(run.level, run.start, run.hashes) for run in runs] == [
        (1, 1, [other.root()]),
        (2, 0, [ROOTS[3]]),
    ]


def test_builder_reports_each_new_complete_node() -> None:
    builder = TreeBuilder()
    runs = builder.append([leaf_hash(data) for data in INPUTS[:3]])
    assert [(run.level, run.start, len(run.hashes)) for run in runs] == [(0, 0, 3), (1, 0, 1)]
    runs = builder.append([leaf_hash(data) for data in INPUTS[3:8]])
    # Leaves 3..7 complete nodes (1,1), (1,2), (1,3), (2,0), (2,1) and (3,0).
    assert [(run.level, run.start, len(run.hashes)) for run in runs] == [
        (0, 3, 5),
        (1, 1, 3),
        (2, 0, 2),
        (3, 0, 1),
    ]
    assert runs[-1].hashes == [ROOTS[7]]
    assert runs[2].hashes == [ROOTS[3], tree_hash(4, MemoryTree(INPUTS[4:8]))]


def test_builder_resumes_from_stored_nodes(tree: MemoryTree) -> None:
    for size in range(9):
        builder = TreeBuilder.resume(size, tree)
        assert builder.size == size
        assert builder.root() == (ROOTS[size - 1] if size else EMPTY_TREE_HASH)
        builder.append([leaf_hash(data) for data in INPUTS[size:]])
        assert builder.root() == ROOTS[7]
