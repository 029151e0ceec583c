"""C2SP tlog-cosignature v1: keys, the signed message and signature lines.

The cosigned checkpoint, its cosignature line and the signed message are the
examples of the C2SP ``tlog-cosignature.md`` specification (whose witness
public key is not published: the example line is checked for its layout and
its timestamp, which is the one of the example message).
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from nenjim.domain.transparency import (
    Checkpoint,
    Cosigner,
    CosignerVerifier,
    InvalidKeyError,
    InvalidSignatureError,
    Note,
    NoteSignature,
    SignerKey,
    VerifierKey,
    check_cosignatures,
    cosigned_message,
    open_note,
    sign_checkpoint,
)

SPEC_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
SPEC_MESSAGE = "cosignature/v1\ntime 1679315147\n" + SPEC_BODY
SPEC_COSIGNATURE = (
    "jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+"
    "mbIUBkBIfZ+qnA=="
)
SEED = bytes(range(32))


def test_the_signed_message_is_the_specification_example() -> None:
    assert cosigned_message(SPEC_BODY, 1679315147) == SPEC_MESSAGE.encode()


def test_the_specification_cosignature_line_carries_its_example_time() -> None:
    raw = base64.b64decode(SPEC_COSIGNATURE)
    assert len(raw) == 4 + 8 + 64
    assert int.from_bytes(raw[4:12], "big") == 1679315147


def test_the_key_id_hashes_type_0x04() -> None:
    witness = Cosigner("witness.example/w1", SEED)
    public = witness.verifier.public_key
    digest = hashlib.sha256(b"witness.example/w1\n\x04" + public).digest()
    assert witness.verifier.key_id == int.from_bytes(digest[:4], "big")
    assert witness.verifier.key_id != VerifierKey("witness.example/w1", public).key_id


def test_keys_read_back_what_they_write_and_refuse_the_note_key_type() -> None:
    witness = Cosigner("witness.example/w1", SEED)
    assert Cosigner.parse(witness.encode()).verifier == witness.verifier
    assert CosignerVerifier.parse(witness.verifier.encode()) == witness.verifier
    assert witness.verifier.encode().split("+")[2].startswith("BA")  # base64 of 0x04 ...
    note_key = SignerKey("witness.example/w1", SEED)
    with pytest.raises(InvalidKeyError, match="0x01"):
        Cosigner.parse(note_key.encode())
    with pytest.raises(InvalidKeyError, match="0x01"):
        CosignerVerifier.parse(note_key.verifier.encode())
    with pytest.raises(InvalidKeyError, match="0x04"):
        SignerKey.parse(witness.encode())
    assert "PRIVATE" not in repr(witness)


def _other_id(key: str, field: int) -> str:
    fields = key.split("+")
    fields[field] = f"{(int(fields[field], 16) + 1) % 2**32:08x}"
    return "+".join(fields)


def test_witness_keys_that_claim_another_key_id_or_lack_a_field_are_refused() -> None:
    witness = Cosigner("witness.example/w1", SEED)
    secret = witness.encode()
    public = witness.verifier.encode()

    with pytest.raises(InvalidKeyError, match=r"witness signer key .* does not match") as caught:
        Cosigner.parse(_other_id(secret, 3))
    assert secret.rsplit("+", 1)[1] not in str(caught.value)  # a secret is never quoted
    with pytest.raises(InvalidKeyError, match=r"witness verifier key .* does not match"):
        CosignerVerifier.parse(_other_id(public, 1))
    with pytest.raises(InvalidKeyError, match=r"expected PRIVATE\+KEY\+<name>"):
        Cosigner.parse(secret.replace("PRIVATE+", "PUBLIC+"))
    with pytest.raises(InvalidKeyError, match=r"malformed witness verifier key: expected <name>"):
        CosignerVerifier.parse(public.split("+", 1)[0])


def test_a_cosignature_verifies_on_the_note_and_names_its_time() -> None:
    log = SignerKey("example.com/log", SEED[::-1])
    witness = Cosigner("witness.example/w1", SEED)
    body = Checkpoint("example.com/log", 3, bytes(32)).body()
    line = witness.cosign(body, 1679315147)
    note = open_note(sign_checkpoint(Checkpoint.parse(body), log) + line.line(), [log.verifier])
    (cosignature,) = check_cosignatures(note, [witness.verifier])
    assert cosignature.timestamp == 1679315147
    assert cosignature.name == "witness.example/w1"
    other = Cosigner("witness.example/w2", SEED[1:] + b"\0")
    assert check_cosignatures(note, [other.verifier]) == ()


def test_a_cosignature_on_another_body_or_time_is_refused() -> None:
    witness = Cosigner("witness.example/w1", SEED)
    line = witness.cosign(SPEC_BODY, 10)
    other_body = SPEC_BODY.replace("20852163", "20852164")
    with pytest.raises(InvalidSignatureError, match=r"witness\.example/w1"):
        check_cosignatures(Note(other_body, (), (line,)), [witness.verifier])
    raw = bytearray(base64.b64decode(line.encoded))
    raw[11] ^= 1  # another timestamp
    forged = NoteSignature(line.name, line.key_id, base64.b64encode(bytes(raw)).decode())
    with pytest.raises(InvalidSignatureError, match="does not verify"):
        check_cosignatures(Note(SPEC_BODY, (), (forged,)), [witness.verifier])
    short = NoteSignature(line.name, line.key_id, base64.b64encode(bytes(raw[:40])).decode())
    with pytest.raises(InvalidSignatureError, match="76 bytes"):
        check_cosignatures(Note(SPEC_BODY, (), (short,)), [witness.verifier])


def test_a_timestamp_beyond_2_63_is_refused() -> None:
    with pytest.raises(InvalidSignatureError, match="timestamp"):
        cosigned_message(SPEC_BODY, 1 << 63)
