"""C2SP tlog-witness ``add-checkpoint``: the request format (the specification's example)
and every refusal a witness makes, on a real tree."""

from __future__ import annotations

import base64

import pytest

from nenjim.domain.transparency import (
    EMPTY_ROOT,
    REFUSAL_STATUS,
    AddCheckpoint,
    Checkpoint,
    InconsistentCheckpointError,
    InvalidWitnessRequestError,
    MemoryTree,
    OldSizeMismatchError,
    SignerKey,
    TreeHead,
    UnknownLogError,
    UntrustedCheckpointError,
    WitnessRefusalError,
    consistency_proof,
    leaf_hash,
    parse_size_answer,
    sign_checkpoint,
    size_answer,
    tree_hash,
    witness_checkpoint,
)

SPEC_REQUEST = (
    "old 20852014\n"
    "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"
    "jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n"
    "5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n"
    "/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n"
    "\n"
    "example.com/behind-the-sofa\n"
    "20852163\n"
    "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    "\n"
    "\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/"
    "Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
    "\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+"
    "49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n"
)
SPEC_ANSWER = (
    "\u2014 witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVj"
    "yQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==\n"
    "\u2014 witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vW"
    "hO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==\n"
    "\u2014 witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYK"
    "A7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==\n"
)
ORIGIN = "example.com/log"
LOG = SignerKey(ORIGIN, bytes(range(32)))
LOGS = {ORIGIN: [LOG.verifier]}
TREE = MemoryTree(b"entry %d" % index for index in range(9))


def _request(old: int, new: int, proof: list[bytes] | None = None) -> AddCheckpoint:
    note = sign_checkpoint(Checkpoint(ORIGIN, new, tree_hash(new, TREE)), LOG)
    return AddCheckpoint(
        old, tuple(consistency_proof(old, new, TREE) if proof is None else proof), note
    )


def test_the_specification_request_reads_and_writes_back() -> None:
    request = AddCheckpoint.parse(SPEC_REQUEST.encode())
    assert request.old_size == 20852014
    assert len(request.proof) == 4
    assert all(len(node) == 32 for node in request.proof)
    assert request.note.startswith("example.com/behind-the-sofa\n20852163\n")
    assert request.encode() == SPEC_REQUEST.encode()


def test_the_specification_answer_is_signature_lines_of_cosignature_size() -> None:
    # The example's keys are not published: the lines are read, not verified.
    lines = SPEC_ANSWER.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("\u2014 witness.example/w") for line in lines)
    assert {len(base64.b64decode(line.split(" ")[2])) for line in lines} == {76}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"old 01\n\nx\n", "not 'old <size>'"),
        (b"old -1\n\nx\n", "not 'old <size>'"),
        (b"old 1\nAAAA\n\nx\n", "line 2"),
        (b"old 1\nx\n", "no empty line"),
        (b"old 1\n" + b"A" * 42 + b"B=\n\nx\n", "line 2"),  # stray bits: not canonical
        ((b"old 1\n" + (b"A" * 43 + b"=\n") * 64 + b"\nx\n"), "64 proof lines"),
        (b"\xff", "not UTF-8"),
    ],
)
def test_a_malformed_request_is_refused_with_a_line_naming_it(body: bytes, problem: str) -> None:
    with pytest.raises(InvalidWitnessRequestError, match=problem):
        AddCheckpoint.parse(body)


def test_a_first_checkpoint_and_a_consistent_successor_are_accepted() -> None:
    assert witness_checkpoint(_request(0, 4, []), LOGS, {}).size == 4
    latest = {ORIGIN: TreeHead(4, tree_hash(4, TREE))}
    assert witness_checkpoint(_request(4, 9), LOGS, latest).size == 9
    assert witness_checkpoint(_request(4, 4, []), LOGS, latest).size == 4


def test_an_inconsistent_checkpoint_is_refused() -> None:
    latest = {ORIGIN: TreeHead(4, leaf_hash(b"another history"))}
    with pytest.raises(InconsistentCheckpointError, match="consistency proof"):
        witness_checkpoint(_request(4, 9), LOGS, latest)
    good = {ORIGIN: TreeHead(4, tree_hash(4, TREE))}
    with pytest.raises(InconsistentCheckpointError):
        witness_checkpoint(_request(4, 9, [EMPTY_ROOT] * 3), LOGS, good)


def test_an_old_size_the_witness_did_not_cosign_is_a_conflict_naming_its_size() -> None:
    latest = {ORIGIN: TreeHead(4, tree_hash(4, TREE))}
    with pytest.raises(OldSizeMismatchError) as caught:
        witness_checkpoint(_request(2, 9), LOGS, latest)
    assert caught.value.size == 4
    assert parse_size_answer(size_answer(caught.value.size)) == 4
    forked = {ORIGIN: TreeHead(9, leaf_hash(b"fork"))}
    with pytest.raises(OldSizeMismatchError):
        witness_checkpoint(_request(9, 9, []), LOGS, forked)


def test_unknown_logs_bad_signatures_and_impossible_sizes_are_refused() -> None:
    with pytest.raises(UnknownLogError, match=ORIGIN):
        witness_checkpoint(_request(0, 4, []), {"example.org": [LOG.verifier]}, {})
    stranger = SignerKey(ORIGIN, bytes(32))
    with pytest.raises(UntrustedCheckpointError, match=ORIGIN):
        witness_checkpoint(_request(0, 4, []), {ORIGIN: [stranger.verifier]}, {})
    with pytest.raises(InvalidWitnessRequestError, match="above"):
        witness_checkpoint(_request(5, 4, []), LOGS, {})
    with pytest.raises(InvalidWitnessRequestError, match="must be empty"):
        witness_checkpoint(_request(0, 4, [EMPTY_ROOT]), LOGS, {})


def test_every_refusal_has_its_protocol_status() -> None:
    assert set(REFUSAL_STATUS.values()) == {400, 403, 404, 409, 422}
    assert all(issubclass(kind, WitnessRefusalError) for kind in REFUSAL_STATUS)
