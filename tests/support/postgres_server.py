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


class _Cluster:
    """Runs the server's tools in one temporary directory, as ``nobody`` when we are root."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(directory, "nobody")
            directory.chmod(0o700)
            self.run_as = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]

    def run(self, tool: str, *arguments: str, check: bool = True) -> None:
        subprocess.run(
            [*self.run_as, _tool(tool), *arguments],
            check=check,
            capture_output=True,
            cwd=self.directory,
        )

    def start(self, data: Path, port: int, *settings: str) -> str:
        """Start the server of ``data`` on ``port``; its URL."""
        options = " ".join(
            [f"-p {port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"]
            + [f"-c {setting}" for setting in settings]
        )
        log = str(self.directory / f"log-{port}")
        self.run("pg_ctl", "-D", str(data), "-l", log, "-o", options, "-w", "start")
        return f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def stop(self, data: Path) -> None:
        self.run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop", check=False)


@contextmanager
def throwaway_cluster() -> Iterator[str]:
    """Start a private cluster on a free port; yield its URL; stop and delete it."""
    directory = Path(tempfile.mkdtemp(prefix="nenjim-pg-"))
    cluster = _Cluster(directory)
    data = directory / "data"
    cluster.run("initdb", "-D", str(data), "-U", "postgres", "-A", "trust")
    url = cluster.start(data, _free_port())
    try:
        yield url
    finally:
        cluster.stop(data)
        with suppress(OSError):
            shutil.rmtree(directory)


@contextmanager
def replicated_clusters() -> Iterator[tuple[str, str]]:
    """A throwaway primary and a hot standby streaming from it, each on a free port;
    yield their URLs; stop and delete both.

    The primary keeps ``wal_level=replica`` and initdb's trusted replication
    entries for the loopback address; the standby is a ``pg_basebackup -R`` of it,
    so it follows the primary's WAL as it streams in.
    """
    directory = Path(tempfile.mkdtemp(prefix="nenjim-pg-replicas-"))
    cluster = _Cluster(directory)
    primary, standby = directory / "primary", directory / "standby"
    cluster.run("initdb", "-D", str(primary), "-U", "postgres", "-A", "trust")
    port = _free_port()
    primary_url = cluster.start(primary, port, "wal_level=replica", "max_wal_senders=4")
    try:
        cluster.run(
            "pg_basebackup",
            *("-D", str(standby), "-R", "-X", "stream", "-c", "fast"),
            *("-h", "127.0.0.1", "-p", str(port), "-U", "postgres"),
        )
        standby_url = cluster.start(standby, _free_port(), "hot_standby=on")
        try:
            yield primary_url, standby_url
        finally:
            cluster.stop(standby)
    finally:
        cluster.stop(primary)
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
