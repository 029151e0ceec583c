"""Signed notes and Ed25519 note keys, against golang.org/x/mod/sumdb/note's own examples.

Keys, texts and signed notes are copied from ``note/note_test.go``
(``TestNewVerifier``, ``TestNewSigner``, ``TestSign``, ``TestOpen``) and
``note/example_test.go`` (``ExampleSign``, ``ExampleOpen``,
``ExampleSign_add_signatures``, whose random source reads zeros), as installed
by Debian's ``golang-golang-x-mod-dev`` under ``/usr/share/gocode/src``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nenjim.domain.transparency import (
    AmbiguousKeyError,
    InvalidKeyError,
    InvalidNoteError,
    InvalidSignatureError,
    Note,
    NoteSignature,
    SignerKey,
    UnverifiedNoteError,
    VerifierKey,
    key_id,
    open_note,
    sign_note,
)

PETER_SIGNER = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VERIFIER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VERIFIER = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdng"
    "otpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLo"
    "x33WWd1RvMc+QQ=\n"
)
PETER = NoteSignature(
    "PeterNeumann",
    0xC74F20A3,
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
)
ENOCH = NoteSignature(
    "EnochRoot",
    0xAF0CFE78,
    "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=",
)


def _mangle(key: str) -> list[str]:
    """Every proper substring, and every single-byte increment (TestNewVerifier's manglings)."""
    bad = {key[i:j] for i in range(len(key) + 1) for j in range(i + 1, len(key) + 1)}
    bad.discard(key)
    bad.update(key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :] for i in range(len(key)))
    return sorted(bad)


def test_verifier_key_reads_and_writes_the_go_format() -> None:
    verifier = VerifierKey.parse(PETER_VERIFIER)
    assert verifier.name == "PeterNeumann"
    assert verifier.key_id == 0xC74F20A3
    assert verifier.encode() == PETER_VERIFIER
    assert str(verifier) == PETER_VERIFIER


def test_every_mangled_verifier_key_is_refused(one_line: Callable[[BaseException], str]) -> None:
    for bad in _mangle(PETER_VERIFIER):
        with pytest.raises(InvalidKeyError) as caught:
            VerifierKey.parse(bad)
        one_line(caught.value)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        # note_test.go TestNewVerifier: wrong length key (its base64 has stray
        # bits, too) and unknown algorithm, each with an adjusted key hash.
        (
            "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
            "not canonical standard base64",
        ),
        (
            "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "unknown algorithm 0x65",
        ),
        ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "does not match"),
        ("PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "8 hexadecimal"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW=", "base64"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKq\niBfsVkmqq/LDE4izWy10TW", "base64"),
        ("PeterNeumann+c74f20a3+", "base64"),
        ("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "space"),
        ("+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "empty"),
        ("PeterNeumann", "expected <name>+<8 hex digit key ID>+<base64 key>"),
    ],
)
def test_malformed_verifier_keys_say_why(
    key: str, reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidKeyError) as caught:
        VerifierKey.parse(key)
    assert reason in one_line(caught.value)


def test_a_key_of_the_wrong_length_is_refused(one_line: Callable[[BaseException], str]) -> None:
    payload = b"\x01" + bytes(31)
    hex_id = hashlib.sha256(b"short\n" + payload).digest()[:4].hex()
    with pytest.raises(InvalidKeyError) as caught:
        VerifierKey.parse(f"short+{hex_id}+{base64.b64encode(payload).decode()}")
    assert "the Ed25519 key is 31 bytes, not 32" in one_line(caught.value)


def test_upper_case_key_ids_are_read_as_go_reads_them() -> None:
    verifier = VerifierKey.parse(PETER_VERIFIER.replace("c74f20a3", "C74F20A3"))
    assert verifier.encode() == PETER_VERIFIER


def test_signer_key_reads_and_writes_the_go_format() -> None:
    signer = SignerKey.parse(PETER_SIGNER)
    assert signer.name == "PeterNeumann"
    assert signer.key_id == 0xC74F20A3
    assert signer.encode() == PETER_SIGNER
    assert signer.verifier.encode() == PETER_VERIFIER
    assert "AYEK" not in repr(signer)


def test_every_mangled_signer_key_is_refused(one_line: Callable[[BaseException], str]) -> None:
    secret = PETER_SIGNER.rsplit("+", 1)[1]
    for bad in _mangle(PETER_SIGNER):
        with pytest.raises(InvalidKeyError) as caught:
            SignerKey.parse(bad)
        assert secret not in one_line(caught.value)


def test_generated_keys_sign_and_verify() -> None:
    # note_test.go TestGenerateKey / testSignerAndVerifier.
    signer = SignerKey.generate("EnochRoot")
    verifier = VerifierKey.parse(signer.verifier.encode())
    assert SignerKey.parse(signer.encode()).verifier == verifier
    assert verifier.name == signer.name == "EnochRoot"
    assert verifier.key_id == signer.key_id
    signature = signer.sign(b"hi")
    assert verifier.verify(b"hi", signature)
    assert not verifier.verify(b"hi", bytes([signature[0] ^ 1]) + signature[1:])
    assert not verifier.verify(b"hj", signature)
    assert not verifier.verify(b"hi", signature[:-1])


def test_the_zero_seed_key_of_the_go_example() -> None:
    # example_test.go ExampleSign_add_signatures: GenerateKey reading zeros.
    enoch = SignerKey("EnochRoot", bytes(32))
    assert enoch.verifier.encode() == ENOCH_VERIFIER
    assert (
        enoch.encode()
        == "PRIVATE+KEY+EnochRoot+af0cfe78+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    )


def test_key_id_is_the_documented_hash() -> None:
    public_key = VerifierKey.parse(PETER_VERIFIER).public_key
    digest = hashlib.sha256(b"PeterNeumann\n\x01" + public_key).digest()
    assert key_id("PeterNeumann", public_key) == int.from_bytes(digest[:4], "big") == 0xC74F20A3


@pytest.mark.parametrize(
    "name",
    ["", "a+b", "a b", "a\tb", "a\nb", "a\u00a0b", "a\u2003b", "a\u3000b", "a\x01b", "a\ud800"],
)
def test_key_names_without_plus_space_or_control(
    name: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidKeyError) as caught:
        SignerKey(name, bytes(32))
    one_line(caught.value)
    with pytest.raises(InvalidKeyError):
        VerifierKey(name, bytes(32))


def test_raw_keys_of_the_wrong_size_are_refused(one_line: Callable[[BaseException], str]) -> None:
    # note_test.go TestFromEd25519: a public key one byte short.
    with pytest.raises(InvalidKeyError) as caught:
        VerifierKey("EnochRoot", bytes(31))
    assert "31 bytes, not 32" in one_line(caught.value)
    with pytest.raises(InvalidKeyError):
        SignerKey("EnochRoot", bytes(33))


def test_sign_gives_the_go_signed_note() -> None:
    # note_test.go TestSign and example_test.go ExampleSign.
    signer = SignerKey.parse(PETER_SIGNER)
    want = TEXT + "\n" + PETER_SIG
    assert sign_note(TEXT, signer) == want
    # An existing signature by the same key is replaced.
    stale = Note(TEXT, (NoteSignature("PeterNeumann", 0xC74F20A3, "BADSIGN="),))
    assert sign_note(stale, signer) == want


def test_signing_again_adds_a_signature() -> None:
    # example_test.go ExampleSign_add_signatures.
    note = open_note(TEXT + "\n" + PETER_SIG, [VerifierKey.parse(PETER_VERIFIER)])
    enoch = SignerKey("EnochRoot", bytes(32))
    assert sign_note(note, enoch) == TEXT + "\n" + PETER_SIG + ENOCH_SIG


@pytest.mark.parametrize(
    ("note", "reason"),
    [
        ("abc", "does not end with a newline"),
        (Note(TEXT, (NoteSignature("a+b", 0, "ABCD"),)), "malformed existing signature"),
        (Note(TEXT, (NoteSignature("PeterNeumann", 0xC74F20A3, "BADHASH="),)), "existing"),
        (
            Note(TEXT, (NoteSignature("PeterNeumann", 0x12345678, PETER.encoded),)),
            "key ID 12345678",
        ),
        ("a\x00b\n", "control character U+0000 on line 1"),
        ("one\ntwo\rthree\n", "control character U+000D on line 2"),
    ],
)
def test_unsignable_notes_are_refused(
    note: str | Note, reason: str, one_line: Callable[[BaseException], str]
) -> None:
    signer = SignerKey("EnochRoot", bytes(32))
    with pytest.raises(InvalidNoteError) as caught:
        sign_note(note, signer)
    assert reason in one_line(caught.value)


def test_a_note_needs_a_signature() -> None:
    with pytest.raises(InvalidNoteError, match="at least one signature"):
        sign_note(TEXT)


def test_open_gives_the_go_example() -> None:
    # example_test.go ExampleOpen.
    note = open_note((TEXT + "\n" + PETER_SIG).encode(), [VerifierKey.parse(PETER_VERIFIER)])
    assert note.text == TEXT
    assert note.signatures == (PETER,)
    assert f"{note.signatures[0].name} ({note.signatures[0].key_id:08x})" == (
        "PeterNeumann (c74f20a3)"
    )


def test_open_keeps_unknown_signatures_unverified() -> None:
    # note_test.go TestOpen: one signature verified, one not; then both verified.
    peter, enoch = VerifierKey.parse(PETER_VERIFIER), VerifierKey.parse(ENOCH_VERIFIER)
    message = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    note = open_note(message, [peter])
    assert note.text == TEXT
    assert note.signatures == (PETER,)
    assert note.unverified == (ENOCH,)
    note = open_note(message, [peter, enoch])
    assert note.signatures == (PETER, ENOCH)
    assert note.unverified == ()


def test_open_without_a_known_signature_fails_but_shows_the_note(
    one_line: Callable[[BaseException], str],
) -> None:
    # note_test.go TestOpen: both unverified.
    with pytest.raises(UnverifiedNoteError) as caught:
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])
    message = one_line(caught.value)
    assert "no valid signature by a known key" in message
    assert "PeterNeumann+c74f20a3, EnochRoot+af0cfe78" in message
    assert caught.value.note.signatures == ()
    assert caught.value.note.unverified == (PETER, ENOCH)


def test_a_signature_sharing_only_name_or_only_key_id_is_unknown() -> None:
    peter = VerifierKey.parse(PETER_VERIFIER)
    same_name = ENOCH_SIG.replace("EnochRoot", "PeterNeumann")
    same_id = PETER_SIG.replace("PeterNeumann", "CarmenSandiego")
    for line in (same_name, same_id):
        with pytest.raises(UnverifiedNoteError):
            open_note(TEXT + "\n" + line, [peter])


def test_listing_one_key_twice_is_not_ambiguous() -> None:
    # Go's VerifierList reports "ambiguous key" for the same verifier listed twice;
    # it is one key, so here it is simply known.
    peter, enoch = VerifierKey.parse(PETER_VERIFIER), VerifierKey.parse(ENOCH_VERIFIER)
    note = open_note(TEXT + "\n" + ENOCH_SIG, [enoch, peter, enoch])
    assert note.signatures == (ENOCH,)


def test_two_different_keys_with_one_name_and_key_id_are_ambiguous(
    one_line: Callable[[BaseException], str],
) -> None:
    # Two made-up public keys whose key IDs for this name collide (found by search).
    first = VerifierKey("example.com/log", hashlib.sha256(b"collision 68357").digest())
    second = VerifierKey("example.com/log", hashlib.sha256(b"collision 181281").digest())
    assert first.key_id == second.key_id == 0x891775E0
    line = NoteSignature("example.com/log", first.key_id, "iRd14AAAAAAAAAAAAAAAAAAAAAA=").line()
    with pytest.raises(AmbiguousKeyError) as caught:
        open_note(TEXT + "\n" + line, [first, second])
    assert "example.com/log+891775e0" in one_line(caught.value)
    # Unused, the collision does no harm.
    note = open_note(TEXT + "\n" + PETER_SIG, [first, second, VerifierKey.parse(PETER_VERIFIER)])
    assert note.signatures == (PETER,)


def test_too_many_signatures(one_line: Callable[[BaseException], str]) -> None:
    # note_test.go TestOpen: 101 signatures, with and without a known key.
    peter = VerifierKey.parse(PETER_VERIFIER)
    for known in ([peter], []):
        with pytest.raises(InvalidNoteError) as caught:
            open_note(TEXT + "\n" + PETER_SIG * 101, known)
        assert "101 signature lines, more than 100" in one_line(caught.value)
    assert open_note(TEXT + "\n" + PETER_SIG * 100, [peter]).signatures == (PETER,)


def test_a_bad_signature_by_a_known_key_rejects_the_note(
    one_line: Callable[[BaseException], str],
) -> None:
    # note_test.go TestOpen "Invalid signature" (Go slices bytes: the em dash is 3).
    line = PETER_SIG.encode()
    bad = line[:60] + b"ABCD" + line[60:]
    with pytest.raises(InvalidSignatureError) as caught:
        open_note(TEXT.encode() + b"\n" + bad, [VerifierKey.parse(PETER_VERIFIER)])
    assert "key PeterNeumann+c74f20a3 does not verify" in one_line(caught.value)


def test_repeated_signatures_count_once() -> None:
    # note_test.go TestOpen "Duplicated verified and unverified signatures".
    enoch_line = ENOCH_SIG.encode()
    enoch_abcd = enoch_line[:60] + b"ABCD" + enoch_line[60:]
    message = (TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG).encode() + enoch_abcd
    note = open_note(message, [VerifierKey.parse(PETER_VERIFIER)])
    assert note.signatures == (PETER,)
    assert note.unverified == (
        ENOCH,
        NoteSignature(
            "EnochRoot",
            0xAF0CFE78,
            "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n"
            + "ABCD"
            + "2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=",
        ),
    )


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # note_test.go TestOpen "Invalid encoded message syntax".
        (TEXT.encode(), "no blank line"),
        ((TEXT + "\n").encode(), "does not end with a newline"),
        ((TEXT + "\n" + PETER_SIG[:-1]).encode(), "does not end with a newline"),
        (("\x01" + TEXT + "\n" + PETER_SIG).encode(), "control character U+0001 on line 1"),
        (b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), "not valid UTF-8 at byte 0"),
        (
            (TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Bad Name")).encode(),
            "signature line 1 by 'Bad': the signature is not canonical base64",
        ),
        ((TEXT + "\n" + PETER_SIG + "Unexpected line.\n").encode(), "line 2 does not start"),
        # Beyond Go's list.
        ((TEXT + "\n" + PETER_SIG.replace("=\n", "\n")).encode(), "not canonical base64"),
        ((TEXT + "\n" + PETER_SIG.replace("AM=\n", "AN=\n")).encode(), "not canonical base64"),
        ((TEXT + "\n" + PETER_SIG.replace("\u2014", "-")).encode(), "em dash"),
        ((TEXT + "\n\u2014 PeterNeumann \n").encode(), "not canonical base64"),
        ((TEXT + "\n\u2014 PeterNeumann AAAAAA==\n").encode(), "not canonical base64"),
        ((TEXT + "\n\u2014 a+b " + PETER.encoded + "\n").encode(), "contains '+'"),
        ((TEXT + "\n\u2014 PeterNeumann\n").encode(), "no space between key name and signature"),
        ((TEXT + "\r\n" + PETER_SIG).encode(), "control character U+000D"),
        ("text\n\n\u2014 \ud800 x\n", "not valid Unicode"),
    ],
)
def test_malformed_notes_are_refused(
    message: str | bytes, reason: str, one_line: Callable[[BaseException], str]
) -> None:
    with pytest.raises(InvalidNoteError) as caught:
        open_note(message, [VerifierKey.parse(PETER_VERIFIER)])
    assert type(caught.value) is InvalidNoteError
    assert reason in one_line(caught.value)


def test_text_may_hold_blank_lines() -> None:
    # The text ends at the note's last blank line.
    signer = SignerKey("EnochRoot", bytes(32))
    for text in ("a\n\nb\n", "\n", "a\n\n", "\n\n\n"):
        note = open_note(sign_note(text, signer), [signer.verifier])
        assert note.text == text


NAME = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc"), blacklist_characters="+\u0085"
    ),
    min_size=1,
    max_size=20,
)
TEXT_STRATEGY = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\t\x0b\x0c"),
    max_size=200,
).map(lambda t: "".join(c for c in t if c >= " " or c == "\n") + "\n")


@settings(max_examples=100, deadline=None)
@given(text=TEXT_STRATEGY, names=st.lists(NAME, min_size=1, max_size=3, unique=True))
def test_signed_notes_round_trip(text: str, names: list[str]) -> None:
    signers = [SignerKey(name, hashlib.sha256(name.encode()).digest()) for name in names]
    message = sign_note(text, *signers)
    note = open_note(message, [signer.verifier for signer in signers])
    assert note.text == text
    assert [(s.name, s.key_id) for s in note.signatures] == [(s.name, s.key_id) for s in signers]
    assert open_note(message.encode(), [signers[-1].verifier]).text == text
    for signer in signers:
        assert VerifierKey.parse(signer.verifier.encode()) == signer.verifier
        assert SignerKey.parse(signer.encode()).encode() == signer.encode()
