"""Finds or starts a PostgreSQL server for the tests.

Order: ``$NENJIM_TEST_PG_URL``; else a server answering on 127.0.0.1:5432;
else a throwaway cluster made with ``initdb``/``pg_ctl`` in a temporary
directory (run as the ``nobody`` user when the tests run as root, since the
server refuses to run as root).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    raise FileNotFoundError(f"{name} not found: install the PostgreSQL server package")


@contextmanager
def throwaway_cluster() -> Iterator[str]:
    """Start a private cluster on a free port; yield its URL; stop and delete it."""
    directory = Path(tempfile.mkdtemp(prefix="nenjim-pg-"))
    data = directory / "data"
    run_as: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(directory, "nobody")
        directory.chmod(0o700)
        run_as = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    port = _free_port()
    pg_ctl = _tool("pg_ctl")
    subprocess.run(
        [*run_as, _tool("initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        check=True,
        capture_output=True,
        cwd=directory,
    )
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [
            *run_as,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(directory / "log"),
            "-o",
            options,
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
        cwd=directory,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
            check=False,
            capture_output=True,
            cwd=directory,
        )
        with suppress(OSError):
            shutil.rmtree(directory)


@contextmanager
def postgres_server() -> Iterator[str]:
    """A URL of a PostgreSQL server usable by the tests (see the module docstring)."""
    configured = os.environ.get("NENJIM_TEST_PG_URL")
    if configured:
        yield configured
    elif _answers(DEFAULT_URL):
        yield DEFAULT_URL
    else:
        with throwaway_cluster() as url:
            yield url
