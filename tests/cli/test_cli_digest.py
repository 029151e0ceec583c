"""``nenjim journal digest``: the digest of a file's exact bytes."""

from __future__ import annotations

import hashlib

from nenjim.cli import main


def test_digest_covers_exact_bytes_including_crlf(tmp_path, capsys):
    file = tmp_path / "release.tar"
    data = b"line one\r\nline two\n\x00\xff"
    file.write_bytes(data)

    assert main(["journal", "digest", str(file)]) == 0

    assert capsys.readouterr().out == f"sha256:{hashlib.sha256(data).hexdigest()}\n"


def test_digest_of_a_revision_file_is_its_journal_digest(sample, capsys):
    assert main(["journal", "digest", str(sample.widget_genesis)]) == 0
    digest = capsys.readouterr().out.strip()

    assert main(["journal", "log", str(sample.root), "com.example.widget"]) == 0
    assert digest in capsys.readouterr().out


def test_digest_of_an_empty_file(tmp_path, capsys):
    file = tmp_path / "empty"
    file.write_bytes(b"")

    assert main(["journal", "digest", str(file)]) == 0

    assert capsys.readouterr().out == f"sha256:{hashlib.sha256(b'').hexdigest()}\n"


def test_digest_of_a_missing_file_fails(tmp_path, capsys):
    missing = tmp_path / "missing"

    assert main(["journal", "digest", str(missing)]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"nenjim: error: cannot read {missing}: No such file or directory\n"
