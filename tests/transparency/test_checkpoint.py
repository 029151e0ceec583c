"""C2SP tlog-checkpoint bodies, signed and opened as notes.

The example body is the one in the C2SP tlog-checkpoint specification; the
tree note and its malformed variants are from golang.org/x/mod/sumdb/tlog
``note_test.go`` (``TestFormatTree``, ``TestParseTree``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nenjim.domain.transparency import (
    EMPTY_ROOT,
    Checkpoint,
    InvalidCheckpointError,
    InvalidSignatureError,
    SignerKey,
    UnverifiedNoteError,
    leaf_hash,
    open_checkpoint,
    sign_checkpoint,
    sign_note,
)

SPEC_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
GO_TREE = "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n"


def test_the_specification_example() -> None:
    checkpoint = Checkpoint.parse(SPEC_BODY)
    assert checkpoint.origin == "example.com/behind-the-sofa"
    assert checkpoint.size == 20852163
    assert checkpoint.root_hash == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert checkpoint.extensions == ()
    assert checkpoint.body() == SPEC_BODY
    assert Checkpoint.parse(SPEC_BODY.encode()) == checkpoint


def test_the_go_tree_note_is_a_checkpoint() -> None:
    # tlog note_test.go TestFormatTree: N = 123456789012, hash = RecordHash("hello world").
    checkpoint = Checkpoint("go.sum database tree", 123456789012, leaf_hash(b"hello world"))
    assert checkpoint.body() == GO_TREE
    assert Checkpoint.parse(GO_TREE) == checkpoint


def test_extension_lines_are_kept() -> None:
    # TestParseTree accepts trailing lines; a checkpoint keeps them as extensions.
    body = GO_TREE + "JOE\n" * 3
    checkpoint = Checkpoint.parse(body)
    assert checkpoint.extensions == ("JOE", "JOE", "JOE")
    assert checkpoint.body() == body


def test_the_empty_tree() -> None:
    checkpoint = Checkpoint("example.com/log", 0, EMPTY_ROOT)
    assert checkpoint.body() == "example.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
    assert Checkpoint.parse(checkpoint.body()) == checkpoint


HASH = "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0="


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # tlog note_test.go TestParseTree: a hexadecimal size, an over-long hash.
        (f"go.sum database tree\n0xabcdef\n{HASH}\n", "line 2: tree size '0xabcdef'"),
        (
            "go.sum database tree\n123456789012\n"
            "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n",
            "line 3: root hash",
        ),
        # Go ignores text after the tree; a checkpoint's lines all end in a newline.
        (GO_TREE + "JOE", "does not end with a newline"),
        (f"log\n012\n{HASH}\n", "without leading zeros"),
        (f"log\n-1\n{HASH}\n", "tree size '-1'"),
        (f"log\n+1\n{HASH}\n", "tree size '+1'"),
        (f"log\n 1\n{HASH}\n", "tree size ' 1'"),
        (f"log\n1_000\n{HASH}\n", "tree size '1_000'"),
        (f"log\n\u0661\n{HASH}\n", "tree size"),
        (f"log\n9223372036854775808\n{HASH}\n", "tree size"),
        (f"log\n1\n{HASH.rstrip('=')}\n", "line 3: root hash"),
        (f"log\n1\n{HASH[:-2]}1=\n", "line 3: root hash"),  # stray low bits
        (f"log\n1\n{base64.b64encode(bytes(31)).decode()}\n", "line 3: root hash"),
        (f"log\n1\n{base64.urlsafe_b64encode(bytes([0xFB] * 32)).decode()}\n", "line 3: root hash"),
        (f"\n1\n{HASH}\n", "line 1 is empty"),
        (f"log\n1\n{HASH}\n\n", "line 4 is empty"),
        (f"log\n1\n{HASH}\n\next\n", "line 4 is empty"),
        (f"log\r\n1\n{HASH}\n", "line 1 contains a control character"),
        (f"log\n1\n{HASH}\ne\tx\n", "line 4 contains a control character"),
        ("log\n1\n", "has 2 lines"),
        ("", "does not end with a newline"),
        (b"log\n1\n\xff\n", "not valid UTF-8 at byte 6"),
    ],
)
def test_malformed_checkpoints_are_refused(
    body: str | bytes, reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidCheckpointError) as caught:
        Checkpoint.parse(body)
    assert reason in one_line(caught.value)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (("", 1, EMPTY_ROOT, ()), "origin '' is empty"),
        (("a\nb", 1, EMPTY_ROOT, ()), "contains a newline"),
        (("log", -1, EMPTY_ROOT, ()), "tree size -1"),
        (("log", 1 << 63, EMPTY_ROOT, ()), "tree size 9223372036854775808"),
        (("log", 1, b"short", ()), "5 bytes, not 32"),
        (("log", 1, EMPTY_ROOT, ("",)), "extension line 1 ('') is empty"),
        (("log", 1, EMPTY_ROOT, ("ok", "a\nb")), "extension line 2"),
    ],
)
def test_impossible_checkpoints_cannot_be_made(
    fields: tuple[str, int, bytes, tuple[str, ...]],
    reason: str,
    one_line: Callable[[BaseException], str],
) -> None:
    with pytest.raises(InvalidCheckpointError) as caught:
        Checkpoint(*fields)
    assert reason in one_line(caught.value)


LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=0x20),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(
    origin=LINE,
    size=st.integers(0, (1 << 63) - 1),
    root=st.binary(min_size=32, max_size=32),
    extensions=st.lists(LINE, max_size=3),
)
def test_checkpoints_round_trip(origin: str, size: int, root: bytes, extensions: list[str]) -> None:
    checkpoint = Checkpoint(origin, size, root, tuple(extensions))
    assert Checkpoint.parse(checkpoint.body()) == checkpoint
    assert Checkpoint.parse(checkpoint.body().encode()) == checkpoint


def test_signed_checkpoints_open_with_the_verifier_key(
    one_line: Callable[[BaseException], str],
) -> None:
    signer = SignerKey("example.com/log", bytes(range(32)))
    checkpoint = Checkpoint("example.com/log", 5, leaf_hash(b"x"))
    note = sign_checkpoint(checkpoint, signer)
    assert note.startswith(checkpoint.body() + "\n\u2014 example.com/log ")
    assert open_checkpoint(note, [signer.verifier]) == checkpoint
    assert open_checkpoint(note.encode(), [signer.verifier], origin="example.com/log") == checkpoint

    with pytest.raises(InvalidCheckpointError) as caught:
        open_checkpoint(note, [signer.verifier], origin="example.com/other")
    assert "origin 'example.com/log', expected 'example.com/other'" in one_line(caught.value)
    with pytest.raises(UnverifiedNoteError):
        open_checkpoint(note, [SignerKey("example.com/log", bytes(32)).verifier])
    forged = note.replace("\n5\n", "\n6\n")
    with pytest.raises(InvalidSignatureError):
        open_checkpoint(forged, [signer.verifier])


def test_a_signed_note_that_is_no_checkpoint_is_refused() -> None:
    signer = SignerKey("example.com/log", bytes(32))
    with pytest.raises(InvalidCheckpointError, match="has 1 lines"):
        open_checkpoint(sign_note("just text\n", signer), [signer.verifier])
