"""A real ``nenjim serve`` process for tests that talk to it over HTTP, and its metrics read."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client.parser import text_string_to_metric_families

NENJIM = [sys.executable, "-m", "nenjim"]
SERVE = [*NENJIM, "serve"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@contextmanager
def running(command: list[str]) -> Iterator[dict[str, str]]:
    """The first JSON line a server process ``command`` prints (what it serves, and where),
    the process stopped (Ctrl-C) afterwards."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                errors.seek(0)
                name = " ".join(command[2:4])
                raise AssertionError(f"{name} did not start: {errors.read().decode()}")
            yield json.loads(line)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def serving(store: str, key: str, *options: str) -> Iterator[str]:
    """The base URL of ``nenjim serve --port 0 --json OPTIONS`` on ``store`` signing with the
    key file ``key``, stopped (Ctrl-C) afterwards."""
    command = [*SERVE, "--store", store, "--key", key, "--port", "0", "--json", *options]
    with running(command) as started:
        yield started["serving"].rstrip("/")


def metric_samples(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, by (name, sorted labels)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
