"""``benchmarks.probes.ingest_rounds``: the same ingest work every run, for instruction counts."""

from __future__ import annotations

import pytest

from benchmarks.probes import ingest_rounds


def test_writers_ingest_in_turns_the_rounds_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    ingest_rounds.main(["--writers", "3", "--rounds", "4"])
    assert capsys.readouterr().out.startswith("12 ingests by 3 writers: ")


def test_no_rounds_is_the_set_up_alone(capsys: pytest.CaptureFixture[str]) -> None:
    ingest_rounds.main(["--writers", "2", "--rounds", "0"])
    assert capsys.readouterr().out == ""


def test_more_rounds_than_prepared_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        ingest_rounds.main(["--rounds", str(ingest_rounds.CAPACITY + 1)])
    assert refused.value.code == 2
    assert "--rounds must be 0 to 400" in capsys.readouterr().err
