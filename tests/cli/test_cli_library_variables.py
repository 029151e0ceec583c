"""The wrapped library's environment variables do not stop the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "journals"


@pytest.mark.parametrize("value", ["bad", "datetime:nowhere", "zoneinfo:ZoneInfo"])
def test_a_time_zone_topic_the_library_cannot_use_is_ignored(value: str) -> None:
    # eventsourcing resolves TZINFO_TOPIC when it is imported: a bad one used to end
    # every command in an internal error (exit 4).
    env = {**os.environ, "TZINFO_TOPIC": value}
    done = subprocess.run(
        [sys.executable, "-m", "nenjim", "journal", "verify", str(SAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "artifacts" in done.stdout
