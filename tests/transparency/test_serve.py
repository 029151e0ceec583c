"""``nenjim serve`` as a real process, read by a real HTTP client, and ``verify-log``.

Tiles and entry bundles are compared byte for byte with those built
independently from the stored leaves (``MemoryTree``); the checkpoint is
verified with the verifier key only.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx
import pytest

from benchmarks.served_log import served_log
from journal_texts import Rel, journal_text
from nenjim.cli import main as nenjim
from nenjim.client import log_hashing
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.transparency import (
    Checkpoint,
    MemoryTree,
    SignerKey,
    Tile,
    encode_entry_bundle,
    open_checkpoint,
    read_tile,
    sign_checkpoint,
)
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transparency_proofs import check_proof

V1 = "20260101T000000Z"


def _append(store: str, first: int, count: int) -> None:
    log = JournalLog(store)
    try:
        log.append_chains(
            [
                JournalChain.start(parse_journal(journal_text(f"org.example.a{n}", V1)))
                for n in range(first, first + count)
            ]
        )
    finally:
        log.close()


@pytest.fixture
def signer(tmp_path: Path) -> tuple[SignerKey, Path]:
    key = SignerKey.generate("example.com/journal")
    path = tmp_path / "log.key"
    path.write_text(key.encode() + "\n", encoding="utf-8")
    path.chmod(0o600)  # a signer key others can read is refused
    return key, path


@pytest.fixture
def served(tmp_path: Path, signer: tuple[SignerKey, Path]) -> Iterator[tuple[str, str]]:
    """A store of 300 revisions and the URL of a server over it."""
    store = f"sqlite:///{tmp_path / 'journal.db'}"
    _append(store, 0, 300)
    with served_log(store, signer[1]) as url:
        yield store, url


def _leaves(store: str) -> list[bytes]:
    log = JournalLog(store, create=False)
    try:
        tiled = log.tiled_log
        return [data for _, data in tiled.read_entries(0, tiled.entry_count())]
    finally:
        log.close()


def test_the_checkpoint_verifies_with_the_verifier_key(
    served: tuple[str, str], signer: tuple[SignerKey, Path]
) -> None:
    store, url = served
    response = httpx.get(f"{url}/checkpoint")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    checkpoint = open_checkpoint(response.text, [signer[0].verifier])
    assert (checkpoint.origin, checkpoint.size) == ("example.com/journal", 300)
    assert checkpoint.root_hash == MemoryTree(_leaves(store)).root()


@pytest.mark.parametrize(
    ("path", "tile", "immutable"),
    [
        ("tile/0/000", Tile(0, 0), True),
        ("tile/0/001.p/44", Tile(0, 1, 44), False),
        ("tile/0/001.p/3", Tile(0, 1, 3), False),
        ("tile/1/000.p/1", Tile(1, 0, 1), False),
    ],
)
def test_tiles_are_byte_exact(
    served: tuple[str, str], path: str, tile: Tile, *, immutable: bool
) -> None:
    store, url = served
    response = httpx.get(f"{url}/{path}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == read_tile(tile, MemoryTree(_leaves(store)))
    assert ("immutable" in response.headers["cache-control"]) is immutable


def test_entry_bundles_are_byte_exact(served: tuple[str, str]) -> None:
    store, url = served
    leaves = _leaves(store)
    full = httpx.get(f"{url}/tile/entries/000")
    assert full.content == encode_entry_bundle(leaves[:256])
    assert "immutable" in full.headers["cache-control"]
    partial = httpx.get(f"{url}/tile/entries/001.p/44")
    assert partial.content == encode_entry_bundle(leaves[256:])
    assert partial.headers["content-type"] == "application/octet-stream"


@pytest.mark.parametrize(
    "path",
    ["tile/0/001", "tile/0/001.p/45", "tile/2/000.p/1", "tile/0/1", "tile/entries/001", "x"],
)
def test_what_the_tree_does_not_hold_is_not_found(served: tuple[str, str], path: str) -> None:
    assert httpx.get(f"{served[1]}/{path}").status_code == 404


def test_a_lookup_answers_a_proof_that_checks(
    served: tuple[str, str], signer: tuple[SignerKey, Path]
) -> None:
    response = httpx.get(f"{served[1]}/lookup/org.example.a7/{V1}")
    assert response.status_code == 200
    checked = check_proof(response.json(), signer[0].verifier)
    assert checked.checkpoint.size == 300
    assert response.json()["index"] == 7
    missing = httpx.get(f"{served[1]}/lookup/org.example.none/{V1}")
    assert missing.status_code == 404
    assert httpx.get(f"{served[1]}/openapi.json").json()["openapi"] == "3.1.0"


def test_the_server_follows_the_log(
    served: tuple[str, str], signer: tuple[SignerKey, Path]
) -> None:
    store, url = served
    _append(store, 300, 10)  # another process's writer, as far as the server knows
    deadline = time.monotonic() + 2
    while True:
        checkpoint = open_checkpoint(httpx.get(f"{url}/checkpoint").text, [signer[0].verifier])
        if checkpoint.size == 310 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert checkpoint.size == 310
    assert httpx.get(f"{url}/tile/0/001.p/54").status_code == 200


def _verifier_file(signer: SignerKey, directory: Path) -> Path:
    """The signer's verifier key, written to a file as ``nenjim keys new`` prints it."""
    verifier = directory / "log.vkey"
    verifier.write_text(signer.verifier.encode() + "\n", encoding="utf-8")
    return verifier


def _verifier_and_checkpoint(signer: SignerKey, url: str, directory: Path) -> tuple[Path, Path]:
    """The signer's verifier key file, and the served checkpoint saved as a trusted one."""
    verifier = _verifier_file(signer, directory)
    trusted = directory / "cp"
    trusted.write_text(httpx.get(f"{url}/checkpoint").text, encoding="utf-8")
    return verifier, trusted


def test_verify_log_checks_a_served_log_end_to_end(
    served: tuple[str, str],
    signer: tuple[SignerKey, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store, url = served
    verifier, trusted = _verifier_and_checkpoint(signer[0], url, tmp_path)
    _append(store, 300, 1)
    code = nenjim(["journal", "verify-log", url, "--key", str(verifier), "--since", str(trusted)])
    out = capsys.readouterr().out
    assert (code, out) == (
        0,
        "log OK: example.com/journal at tree size 301: 3 tiles and every entry verified, "
        "extending the trusted tree of 300\n",
    )
    # A tile no root hash is read from: the served tile itself is wrong.
    _zero_first_hash(tmp_path / "journal.db", level=0)
    code = nenjim(["journal", "verify-log", url, "--key", str(verifier)])
    assert code == 1
    assert capsys.readouterr().err == (
        f"nenjim: error: verify-log failed: {url}/tile/0/000 is not the tile of the "
        "served entries\n"
    )
    # A tile the server reads the root from: the checkpoint signs a wrong root.
    _zero_first_hash(tmp_path / "journal.db", level=1)
    code = nenjim(["journal", "verify-log", url, "--key", str(verifier)])
    assert code == 1
    assert capsys.readouterr().err == (
        "nenjim: error: verify-log failed: the 301 served entries do not hash to the "
        "checkpoint's root hash\n"
    )


def test_verify_log_hashes_on_a_process_pool_as_in_process(
    served: tuple[str, str],
    signer: tuple[SignerKey, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, url = served
    verifier, trusted = _verifier_and_checkpoint(signer[0], url, tmp_path)
    _append(store, 300, 260)  # a second full tile, and a partial one
    # Every log takes the pool (with at least one worker) that large logs take.
    monkeypatch.setattr(log_hashing, "POOL_MIN_TILES", 0)
    monkeypatch.setattr(log_hashing, "usable_cores", lambda: 2)
    pools: list[int] = []
    real_pool = log_hashing.ProcessPoolExecutor

    def counted_pool(workers: int) -> ProcessPoolExecutor:
        pools.append(workers)
        return real_pool(workers)

    monkeypatch.setattr(log_hashing, "ProcessPoolExecutor", counted_pool)
    command = ["journal", "verify-log", url, "--key", str(verifier), "--since", str(trusted)]
    assert nenjim(command) == 0
    assert pools == [2]
    assert capsys.readouterr().out == (
        "log OK: example.com/journal at tree size 560: 4 tiles and every entry verified, "
        "extending the trusted tree of 300\n"
    )
    _zero_first_hash(tmp_path / "journal.db", level=0)
    assert nenjim(["journal", "verify-log", url, "--key", str(verifier)]) == 1
    assert capsys.readouterr().err == (
        f"nenjim: error: verify-log failed: {url}/tile/0/000 is not the tile of the "
        "served entries\n"
    )


def _zero_first_hash(database: Path, *, level: int) -> None:
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE journal_tiles SET data = zeroblob(32) || substr(data, 33) "
            "WHERE level = ? AND idx = 0",
            (level,),
        )


def test_verify_log_refuses_a_log_that_is_not_the_trusted_ones_extension(
    served: tuple[str, str],
    signer: tuple[SignerKey, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, url = served
    verifier = _verifier_file(signer[0], tmp_path)
    other = MemoryTree([b"another history\n"] * 5)
    forged = tmp_path / "cp"
    forged.write_text(
        sign_checkpoint(Checkpoint("example.com/journal", 5, other.root()), signer[0])
    )
    code = nenjim(["journal", "verify-log", url, "--key", str(verifier), "--since", str(forged)])
    assert code == 1
    assert "the log was rewritten" in capsys.readouterr().err


def test_two_servers_over_one_postgresql_log_sign_identical_checkpoints(
    postgres_schema_url: str, signer: tuple[SignerKey, Path]
) -> None:
    _append(postgres_schema_url, 0, 3)
    with (
        served_log(postgres_schema_url, signer[1]) as first,
        served_log(postgres_schema_url, signer[1]) as second,
    ):
        assert httpx.get(f"{first}/checkpoint").text == httpx.get(f"{second}/checkpoint").text


def test_the_journal_queries_answer_json_and_follow_the_log(served: tuple[str, str]) -> None:
    store, url = served
    coordinates = _all_coordinates(url)
    assert len(coordinates) == 300
    assert coordinates == sorted(coordinates)
    latest = httpx.get(f"{url}/journal/org.example.a7/latest").json()
    assert (latest["coordinate"], latest["journal_version"]) == ("org.example.a7", V1)
    assert httpx.get(f"{url}/journal/org.example.a7/exact/{V1}").json() == latest
    assert httpx.get(f"{url}/journal/org.example.a7/as-of/20270101T000000Z").json() == latest
    revisions = httpx.get(f"{url}/journal/org.example.a7/revisions").json()
    assert [r["journal_version"] for r in revisions["revisions"]] == [V1]
    for path, status in [
        ("journal/org.example.a7/as-of/20250101T000000Z", 404),
        ("journal/org.example.a7/exact/not-a-version", 400),
        ("journal/org.example.none/latest", 404),
        ("journal/org.example.a7/release/1.0.0", 404),
        ("journal/org.example.a7/other", 404),
    ]:
        response = httpx.get(f"{url}/{path}")
        assert response.status_code == status, path
        assert response.json()["error"]
    _append(store, 300, 2)
    log = JournalLog(store)
    text = journal_text("org.example.released", V1, releases=(Rel("1.0.0"),))
    log.append_chains([JournalChain.start(parse_journal(text))])
    log.close()
    assert len(_all_coordinates(url)) == 303
    release = httpx.get(f"{url}/journal/org.example.released/release/1.0.0").json()
    assert (release["coordinate"], release["version"]) == ("org.example.released", "1.0.0")


def test_verify_log_checks_a_local_root_against_the_served_entries(
    served: tuple[str, str],
    signer: tuple[SignerKey, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, url = served
    verifier = _verifier_file(signer[0], tmp_path)
    root = tmp_path / "root"
    for n in range(300):
        directory = root / f"org.example.a{n}"
        directory.mkdir(parents=True)
        (directory / f"{V1}.journal").write_bytes(
            journal_text(f"org.example.a{n}", V1).encode("utf-8")
        )
    command = ["journal", "verify-log", url, "--key", str(verifier), "--root", str(root)]
    assert nenjim(command) == 0
    assert capsys.readouterr().out.endswith(f"; every file under {root} is in it\n")
    edited = root / "org.example.a7" / f"{V1}.journal"
    edited.write_bytes(edited.read_bytes() + b"# edited\n")
    assert nenjim(command) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"nenjim: error: verify-log failed: {edited}: the served log holds ")
    assert err.count("\n") == 1
    edited.unlink()
    assert nenjim(command) == 1
    assert capsys.readouterr().err == (
        "nenjim: error: verify-log failed: 1 revision(s) of the served log have no file "
        f"under {root}, the first: org.example.a7 {V1}\n"
    )
    extra = root / "org.example.zz" / f"{V1}.journal"
    extra.parent.mkdir()
    extra.write_bytes(journal_text("org.example.zz", V1).encode("utf-8"))
    assert nenjim(command) == 1
    assert capsys.readouterr().err == (
        f"nenjim: error: verify-log failed: {extra}: this revision is not in the served log\n"
    )


def _all_coordinates(url: str) -> list[str]:
    """Every coordinate ``/journal/coordinates`` answers, page after page (``next``)."""
    found: list[str] = []
    cursor = None
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        page = httpx.get(f"{url}/journal/coordinates", params=params).json()
        found.extend(page["coordinates"])
        cursor = page["next"]
        if cursor is None:
            return found
