"""The witness over HTTP (``POST /add-checkpoint``): every answer of the C2SP tlog-witness
protocol, on a real state directory, and two racing requests of which one only advances."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from nenjim.admin.witness import WitnessState, WitnessStateError, check_cosignatures, open_note
from nenjim.domain.transparency import MemoryTree, SignerKey
from nenjim.serve.witness import MAX_BODY, build_witness_app
from tests.transparency.witness_support import (
    FORK,
    LOG,
    LOGS,
    ORIGIN,
    TREE,
    WITNESS,
    add_checkpoint,
    signed,
)


@pytest.fixture
def witness(tmp_path: Path) -> TestClient:
    return TestClient(build_witness_app(WITNESS, LOGS, WitnessState(tmp_path / "state")))


def _post(client: TestClient, old: int, new: int, tree: MemoryTree = TREE) -> tuple[int, str, str]:
    body = add_checkpoint(old, new, tree).encode()
    answer = client.post("/add-checkpoint", content=body)
    return answer.status_code, answer.headers["content-type"], answer.text


def test_a_first_checkpoint_is_cosigned_and_the_cosignature_verifies(witness: TestClient) -> None:
    status, media, lines = _post(witness, 0, 4)
    assert (status, media) == (200, "text/plain; charset=utf-8")
    note = open_note(signed(4) + lines, [LOG.verifier])
    (cosignature,) = check_cosignatures(note, [WITNESS.verifier])
    assert cosignature.name == "witness.example/w1"


def test_a_consistent_successor_is_cosigned_and_recorded(
    witness: TestClient, tmp_path: Path
) -> None:
    assert _post(witness, 0, 4)[0] == 200
    assert _post(witness, 4, 9)[0] == 200
    assert WitnessState(tmp_path / "state").latest()[ORIGIN].size == 9


def test_an_inconsistent_checkpoint_is_refused_and_nothing_is_recorded(
    witness: TestClient, tmp_path: Path
) -> None:
    assert _post(witness, 0, 4)[0] == 200
    status, _, message = _post(witness, 4, 9, tree=FORK)
    assert status == 422
    assert ORIGIN in message
    assert message.count("\n") == 1
    assert WitnessState(tmp_path / "state").latest()[ORIGIN].size == 4


def test_a_stale_old_size_is_409_with_the_size_cosigned(witness: TestClient) -> None:
    assert _post(witness, 0, 4)[0] == 200
    assert _post(witness, 0, 9) == (409, "text/x.tlog.size", "4\n")
    assert _post(witness, 4, 4, tree=FORK)[0] == 409  # the same size, another root


def test_unknown_origins_untrusted_signatures_and_malformed_bodies(tmp_path: Path) -> None:
    elsewhere = {"example.org/x": LOGS[ORIGIN]}
    unknown = TestClient(build_witness_app(WITNESS, elsewhere, _state(tmp_path, "a")))
    assert _post(unknown, 0, 4)[0] == 404
    other = {ORIGIN: [SignerKey(ORIGIN, bytes(32)).verifier]}
    untrusted = TestClient(build_witness_app(WITNESS, other, _state(tmp_path, "b")))
    assert _post(untrusted, 0, 4)[0] == 403
    client = TestClient(build_witness_app(WITNESS, LOGS, _state(tmp_path, "c")))
    assert client.post("/add-checkpoint", content=b"old 01\n\n").status_code == 400
    assert client.post("/add-checkpoint", content=b"x" * (MAX_BODY + 1)).status_code == 413
    assert client.get("/add-checkpoint").status_code == 405


def _state(tmp_path: Path, name: str) -> WitnessState:
    return WitnessState(tmp_path / name)


def test_of_racing_requests_from_one_old_size_exactly_one_advances(tmp_path: Path) -> None:
    state = WitnessState(tmp_path / "state")
    state.cosign(add_checkpoint(0, 2), LOGS, WITNESS)
    results: list[str] = []

    def submit(new: int) -> None:
        try:
            state.cosign(add_checkpoint(2, new), LOGS, WITNESS)
            results.append(f"cosigned {new}")
        except Exception as error:
            results.append(type(error).__name__)

    threads = [threading.Thread(target=submit, args=(size,)) for size in (5, 9, 7, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results).count("OldSizeMismatchError") == 3
    (won,) = [result for result in results if result.startswith("cosigned")]
    assert WitnessState(tmp_path / "state").latest()[ORIGIN].size == int(won.split()[1])


def test_a_damaged_state_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "witness-state.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(WitnessStateError, match=r"witness-state\.json is damaged"):
        WitnessState(tmp_path)
