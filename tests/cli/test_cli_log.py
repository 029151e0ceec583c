"""``nenjim journal log``: an artifact's chain as a table."""

from __future__ import annotations

from nenjim.cli import main


def test_log_lists_the_chain_oldest_first(sample, capsys):
    assert main(["journal", "log", str(sample.root), "com.example.widget"]) == 0

    lines = capsys.readouterr().out.splitlines()
    genesis, head = sample.digest(sample.widget_genesis), sample.digest(sample.widget_head)
    assert lines[0] == "com.example.widget: 2 revisions"
    assert lines[2].split() == [
        "JOURNAL", "VERSION", "DIGEST", "PREDECESSOR", "RELEASES", "MARK",
    ]  # fmt: skip
    assert lines[3].split() == ["20260101T000000Z", genesis, "-", "1", "genesis"]
    assert lines[4].split() == ["20260201T000000Z", head, genesis[:19], "2", "head"]
    assert len(lines) == 5


def test_log_columns_are_aligned(sample, capsys):
    assert main(["journal", "log", str(sample.root), "com.example.widget"]) == 0

    header, genesis, head = capsys.readouterr().out.splitlines()[2:]
    assert header.index("DIGEST") == genesis.index("sha256:") == head.index("sha256:")
    assert header.index("MARK") == genesis.index("genesis") == head.index("head")


def test_log_of_a_single_revision_marks_genesis_and_head(sample, capsys):
    assert main(["journal", "log", str(sample.root), "com.example.core"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "com.example.core: 1 revision"
    assert lines[3].endswith("0         genesis, head")


def test_log_of_an_unknown_artifact_fails(sample, capsys):
    assert main(["journal", "log", str(sample.root), "com.example.nothing"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"nenjim: error: unknown artifact com.example.nothing: no revisions under {sample.root}\n"
    )


def test_log_rejects_an_invalid_coordinate_as_usage(sample, capsys):
    assert main(["journal", "log", str(sample.root), "Com.Example"]) == 2

    err = capsys.readouterr().err
    assert "argument COORD: invalid artifact coordinate 'Com.Example'" in err
    assert "Traceback" not in err
