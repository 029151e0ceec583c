"""``nenjim keys new``, ``journal checkpoint|prove|check-proof`` and ``audit --checkpoint``.

The store is written by ``nenjim journal verify``; its rows are then edited
with plain SQL, as an operator (or an attacker) would, and the tree is
recomputed from the edited texts so that the log is consistent in itself:
only a checkpoint signed before the edit can reveal it.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from journal_texts import Chain, digest, write_chain
from nenjim.cli import main as nenjim
from nenjim.domain.transparency import SignerKey, VerifierKey, open_checkpoint
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE

A, B = "com.example.a0", "com.example.a1"
V1, V2, V3 = "20260101T000000Z", "20260201T000000Z", "20260301T000000Z"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = nenjim(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A signer key file and its verifier key file, made by ``nenjim keys new``."""
    signer = tmp_path / "log.key"
    code, out, _ = _run(capsys, "keys", "new", "example.com/journal", "--out", str(signer))
    assert code == 0
    verifier = tmp_path / "log.vkey"
    verifier.write_text(out.splitlines()[-1] + "\n", encoding="utf-8")
    return signer, verifier


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An SQLite store of two artifacts: a0 (notifications 1-3) and a1 (4-5)."""
    root = tmp_path / "root"
    for artifact, versions in ((A, (V1, V2, V3)), (B, (V1, V2))):
        chain = Chain(artifact)
        for version in versions:
            chain.add(version)
        write_chain(root, chain)
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    assert _run(capsys, "journal", "verify", str(root), "--store", url)[0] == 0
    return url


def _sql(store: str, *statements: tuple[str, tuple[Any, ...]]) -> None:
    with sqlite3.connect(store.removeprefix("sqlite://")) as connection:
        for statement, params in statements:
            connection.execute(statement, params)


def _forget_the_tree(store: str) -> None:
    """Drop the stored tree: the next open recomputes it from the (edited) texts."""
    _sql(store, ("DELETE FROM journal_entries", ()), ("DELETE FROM journal_tiles", ()))


def _checkpoint(capsys: pytest.CaptureFixture[str], store: str, key: Path, out: Path) -> Path:
    code, text, err = _run(capsys, "journal", "checkpoint", "--store", store, "--key", str(key))
    assert code == 0, err
    out.write_text(text, encoding="utf-8")
    return out


# -- keys ------------------------------------------------------------------------------


def test_keys_new_writes_a_private_signer_key_and_prints_its_verifier_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "k"
    code, out, err = _run(capsys, "keys", "new", "example.com/log", "--out", str(path))
    assert (code, err) == (0, "")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    assert text.startswith("PRIVATE+KEY+example.com/log+")
    assert text.endswith("\n")
    signer = SignerKey.parse(text.removesuffix("\n"))
    verifier = VerifierKey.parse(out.splitlines()[-1])
    assert verifier == signer.verifier
    assert "=" not in out.splitlines()[-1]


def test_keys_new_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "k"
    path.write_text("precious\n", encoding="utf-8")
    code, out, err = _run(capsys, "keys", "new", "log", "--out", str(path))
    assert (code, out) == (1, "")
    assert err == f"nenjim: error: {path} exists: a key file is never overwritten\n"
    assert path.read_text(encoding="utf-8") == "precious\n"


@pytest.mark.parametrize("name", ["a+b", "two words", ""])
def test_keys_new_refuses_a_bad_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, _, err = _run(capsys, "keys", "new", name, "--out", str(tmp_path / "k"))
    assert code == 2
    assert err.startswith("nenjim: error: argument NAME: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "k").exists()


# -- checkpoint, prove, check-proof -----------------------------------------------------


def test_a_checkpoint_signs_the_stored_tree(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, verifier = keys
    note = _checkpoint(capsys, store, signer, tmp_path / "cp").read_text(encoding="utf-8")
    checkpoint = open_checkpoint(note, [VerifierKey.parse(verifier.read_text().strip())])
    assert (checkpoint.origin, checkpoint.size) == ("example.com/journal", 5)
    code, out, _ = _run(
        capsys, "journal", "checkpoint", "--store", store, "--key", str(signer), "--origin", "o/x"
    )
    assert code == 0
    assert out.startswith("o/x\n5\n")


def test_a_key_file_without_its_newline_reads_the_same(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, _ = keys
    bare = tmp_path / "bare.key"
    bare.write_text(signer.read_text().removesuffix("\n"), encoding="utf-8")
    bare.chmod(0o600)
    code, out, _ = _run(capsys, "journal", "checkpoint", "--store", store, "--key", str(bare))
    assert code == 0
    assert out.startswith("example.com/journal\n5\n")


def test_an_inclusion_proof_checks_offline(
    store: str,
    keys: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    signer, verifier = keys
    code, out, err = _run(capsys, "journal", "prove", A, V2, "--store", store, "--key", str(signer))
    assert code == 0, err
    document = json.loads(out)
    assert (document["kind"], document["index"], document["tree_size"]) == ("inclusion", 1, 5)
    assert document["leaf"].startswith(f"{A} {V2} sha256:")
    proof = tmp_path / "proof.json"
    proof.write_text(out, encoding="utf-8")
    code, out, _ = _run(capsys, "journal", "check-proof", str(proof), "--key", str(verifier))
    assert code == 0
    assert out.startswith("proof OK: leaf 1 (com.example.a0 20260201T000000Z sha256:")
    monkeypatch.setattr("sys.stdin", io.StringIO(proof.read_text()))
    assert _run(capsys, "journal", "check-proof", "-", "--key", str(verifier))[0] == 0


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.update(index=2), "does not hold"),
        (lambda d: d.update(leaf=d["leaf"].replace("a0", "a9")), "does not hold"),
        (lambda d: d["inclusion_proof"].pop(), "does not hold"),
        (lambda d: d.update(tree_size=4), "its checkpoint for 5"),
        (lambda d: d.update(checkpoint=d["checkpoint"].replace("\n5\n", "\n6\n")), "signature"),
        (lambda d: d.update(kind="other"), "unknown proof kind"),
    ],
)
def test_an_altered_inclusion_proof_fails(
    store: str,
    keys: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    edit: Any,
    says: str,
) -> None:
    signer, verifier = keys
    document = json.loads(
        _run(capsys, "journal", "prove", A, V2, "--store", store, "--key", str(signer))[1]
    )
    edit(document)
    proof = tmp_path / "proof.json"
    proof.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = _run(capsys, "journal", "check-proof", str(proof), "--key", str(verifier))
    assert (code, out) == (1, "")
    assert err.startswith(f"nenjim: error: proof {proof} does not hold: ")
    assert says in err
    assert err.count("\n") == 1


def test_a_proof_under_another_key_fails(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, _ = keys
    other = tmp_path / "other.vkey"
    other.write_text(SignerKey.generate("example.com/journal").verifier.encode(), encoding="utf-8")
    proof = tmp_path / "proof.json"
    proof.write_text(
        _run(capsys, "journal", "prove", B, V1, "--store", store, "--key", str(signer))[1]
    )
    code, _, err = _run(capsys, "journal", "check-proof", str(proof), "--key", str(other))
    assert code == 1
    assert "does not hold" in err


def test_a_consistency_proof_checks_against_a_trusted_checkpoint(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, verifier = keys
    old = _checkpoint(capsys, store, signer, tmp_path / "old-cp")
    root = tmp_path / "root"
    chain = Chain(B)
    for version in (V1, V2, V3):
        chain.add(version)
    write_chain(root, chain)
    assert _run(capsys, "journal", "verify", str(root), "--store", store)[0] == 0
    code, out, _ = _run(
        capsys, "journal", "prove", "--from", "5", "--store", store, "--key", str(signer)
    )
    assert code == 0
    assert (json.loads(out)["old_size"], json.loads(out)["tree_size"]) == (5, 6)
    proof = tmp_path / "consistency.json"
    proof.write_text(out, encoding="utf-8")
    check = ("journal", "check-proof", str(proof), "--key", str(verifier))
    code, out, _ = _run(capsys, *check, "--since", str(old))
    assert (code, out) == (
        0,
        "proof OK: the tree of 5 leaves is a prefix of the tree of 6 leaves, "
        "signed by example.com/journal as example.com/journal\n",
    )
    document = json.loads(proof.read_text())
    document.update(old_size=4, old_root=document["old_root"])
    proof.write_text(json.dumps(document))
    code, _, err = _run(capsys, *check, "--since", str(old))
    assert code == 1
    assert "not from the trusted checkpoint's tree" in err


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (("prove", A, "20990101T000000Z"), 1, f"the log holds no revision {A} 20990101T000000Z"),
        (("prove", "com.example.none", V1), 1, "the log holds no revision"),
        (("prove", "--from", "6"), 1, "tree size 6 is not in [0, 5]"),
        (("prove", A, V1, "--from", "1"), 2, "give either COORD VERSION"),
        (("prove", A), 2, "give either COORD VERSION"),
        (("prove", "--from", "-1"), 2, "not a tree size"),
    ],
)
def test_prove_refuses_what_the_log_does_not_hold(
    store: str,
    keys: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    *,
    argv: tuple[str, ...],
    code: int,
    says: str,
) -> None:
    signer, _ = keys
    answer, out, err = _run(capsys, "journal", *argv, "--store", store, "--key", str(signer))
    assert (answer, out) == (code, "")
    assert says in err.splitlines()[-1]  # argparse's usage errors show the usage first


def test_a_malformed_key_file_is_a_usage_error(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("PRIVATE+KEY+nonsense\n", encoding="utf-8")
    bad.chmod(0o600)
    code, _, err = _run(capsys, "journal", "checkpoint", "--store", store, "--key", str(bad))
    assert code == 2
    assert err.startswith(f"nenjim: error: argument --key: {bad}: ")
    code, _, err = _run(
        capsys, "journal", "checkpoint", "--store", store, "--key", str(tmp_path / "none")
    )
    assert code == 1
    assert "cannot read the key file" in err


# -- audit against a checkpoint ----------------------------------------------------------


def _audit(
    capsys: pytest.CaptureFixture[str], store: str, checkpoint: Path | None, verifier: Path
) -> tuple[int, str, str]:
    anchor = () if checkpoint is None else ("--checkpoint", str(checkpoint), "--key", str(verifier))
    return _run(capsys, "journal", "audit", "--store", store, *anchor)


def _state(store: str, n: int) -> dict[str, Any]:
    with sqlite3.connect(store.removeprefix("sqlite://")) as connection:
        (row,) = connection.execute("SELECT state FROM journal_events WHERE rowid = ?", (n,))
    return dict(json.loads(bytes(row[0])))


def _forge_head(store: str) -> None:
    """Notification 3 (a0's head): text, digest and claim edited together."""
    state = _state(store, 3)
    old = state["digest"]
    state["text"] += "# forged\n"
    state["digest"] = digest(state["text"])
    _sql(
        store,
        ("UPDATE journal_events SET state = ? WHERE rowid = 3", (json.dumps(state).encode(),)),
        (
            "UPDATE journal_claims SET key = ? WHERE namespace = ? AND key = ?",
            (state["digest"], DIGEST_NAMESPACE, old),
        ),
    )


def _delete_tail(store: str) -> None:
    """Notification 5 (a1's head) and its claim removed."""
    _sql(
        store,
        ("DELETE FROM journal_claims WHERE key = ?", (_state(store, 5)["digest"],)),
        ("DELETE FROM journal_events WHERE rowid = 5", ()),
    )


def _renumber(store: str) -> None:
    """Notifications 3 (a0's head) and 4 (a1's genesis) swap ids: another order."""
    _sql(
        store,
        ("UPDATE journal_events SET rowid = 1000 WHERE rowid = 3", ()),
        ("UPDATE journal_events SET rowid = 3 WHERE rowid = 4", ()),
        ("UPDATE journal_events SET rowid = 4 WHERE rowid = 1000", ()),
    )


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_forge_head, "its first 5 revisions, read from their texts in log order, hash to"),
        (_delete_tail, "the log holds 4 revisions, fewer than the 5 of the checkpoint"),
        (_renumber, "its first 5 revisions, read from their texts in log order, hash to"),
    ],
)
def test_the_audit_catches_what_only_a_checkpoint_reveals(
    store: str,
    keys: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    edit: Any,
    says: str,
) -> None:
    signer, verifier = keys
    checkpoint = _checkpoint(capsys, store, signer, tmp_path / "cp")
    code, out, _ = _audit(capsys, store, checkpoint, verifier)
    assert code == 0
    assert out.startswith("checkpoint OK: the log extends example.com/journal at tree size 5\n")
    edit(store)
    _forget_the_tree(store)
    code, out, err = _audit(capsys, store, None, verifier)
    assert code == 1  # the deleted tree (and the projection of the unedited log) show it
    assert "nenjim journal repair rebuilds it" in err
    # The explicit repair rebuilds both from the edited log: it is consistent in itself,
    # and the log alone cannot tell any more.
    assert _run(capsys, "journal", "repair", "--store", store)[0] == 0
    code, out, err = _audit(capsys, store, None, verifier)
    assert code == 0, err
    code, out, err = _audit(capsys, store, checkpoint, verifier)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"nenjim: error: audit failed: the log does not extend checkpoint {checkpoint}: "
    )
    assert says in err
    assert err.count("\n") == 1


def test_the_audit_finds_a_tree_edited_to_match_forged_texts_without_a_recomputed_root(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, verifier = keys
    checkpoint = _checkpoint(capsys, store, signer, tmp_path / "cp")
    _forge_head(store)  # the stored tree still holds the original leaf
    code, _, err = _audit(capsys, store, None, verifier)
    assert code == 1  # first found in the persisted projection's row of the forged head
    assert "the persisted chain projection's row at position 3 holds" in err
    _sql(store, ("DROP TABLE nenjim_projections", ()))
    _sql(store, ("DROP TABLE journal_chain_revisions_g1", ()))
    code, _, err = _audit(capsys, store, None, verifier)
    assert code == 1
    assert "transparency leaf 2 (notification 3) differs" in err
    code, _, err = _audit(capsys, store, checkpoint, verifier)
    assert code == 1
    assert "hash to" in err


def test_the_audit_needs_the_checkpoint_and_its_key_together(
    store: str, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer, _ = keys
    checkpoint = _checkpoint(capsys, store, signer, tmp_path / "cp")
    only = ("--checkpoint", str(checkpoint))
    code, _, err = _run(capsys, "journal", "audit", "--store", store, *only)
    assert code == 2
    assert "--checkpoint and --key go together" in err
    code, _, err = _audit(capsys, store, checkpoint, signer)  # the signer key, not the verifier
    assert code == 2
    assert "argument --key" in err
    other = tmp_path / "other.vkey"
    other.write_text(SignerKey.generate("example.com/journal").verifier.encode())
    code, _, err = _audit(capsys, store, checkpoint, other)
    assert code == 1
    assert f"checkpoint {checkpoint}: " in err
