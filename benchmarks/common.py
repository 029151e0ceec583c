"""Shared helpers of the benchmarks: bounded timed loops, tables, scratch stores, texts, profiles.

Every loop here is bounded twice, by a time budget and by the work a
benchmark prepared in advance, so a slow or stuck store cannot make a
benchmark run away. PostgreSQL is only ever reached on the loopback address.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import itertools
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
# The benchmarks may only talk to a server on this machine.
PG_URL = os.environ.get("NENJIM_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# A worker thread that does not stop within this long after its deadline is a hang.
_JOIN_GRACE_SECONDS = 120.0

Step = Callable[[], bool]
"""One operation of one worker; returns ``False`` once its prepared work is used up."""


# --------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class Timing:
    """How long to measure: ``runs`` passes of ``seconds`` each after a ``warmup`` pass."""

    runs: int
    seconds: float
    warmup: float


@dataclass(frozen=True, slots=True)
class Options:
    """Command-line choices shared by every benchmark."""

    quick: bool
    profile: bool


def parse_options(argv: Sequence[str] | None, description: str) -> Options:
    """Parse ``--quick`` and ``--profile/--no-profile`` (profiles default on, off when quick)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (~15 s)")
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print a cProfile summary for every missed target (default: on unless --quick)",
    )
    args = parser.parse_args(argv)
    quick = bool(args.quick)
    profile = (not quick) if args.profile is None else bool(args.profile)
    return Options(quick=quick, profile=profile)


# --------------------------------------------------------------------------- timed loops


@dataclass(frozen=True, slots=True)
class Pass:
    """One timed pass: operations done by all workers and the wall time they took."""

    ops: int
    seconds: float
    exhausted: bool

    @property
    def rate(self) -> float:
        """Operations per second."""
        return self.ops / self.seconds if self.seconds > 0 else 0.0


def run_pass(
    steps: Sequence[Step], seconds: float, profiles: list[cProfile.Profile] | None = None
) -> Pass:
    """Run every step in its own thread until ``seconds`` pass or its work runs out.

    All threads start together on a barrier; the pass ends when the last
    thread finishes its in-flight operation. With ``profiles``, each thread
    runs under its own ``cProfile.Profile`` (cProfile sees one thread only),
    appended to the list.
    """
    count = len(steps)
    barrier = threading.Barrier(count + 1)
    stop = threading.Event()
    done = [0] * count
    ended = [0.0] * count
    exhausted = [False] * count
    errors: list[BaseException] = []

    def body(index: int) -> None:
        step = steps[index]
        profile = cProfile.Profile() if profiles is not None else None
        barrier.wait()
        if profile is not None:
            profile.enable()
        ops = 0
        try:
            while not stop.is_set():
                if not step():
                    exhausted[index] = True
                    break
                ops += 1
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            ended[index] = time.perf_counter()
            done[index] = ops
            if profile is not None:
                profile.disable()
                assert profiles is not None
                profiles.append(profile)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    deadline = started + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.perf_counter()))
    stop.set()
    for thread in threads:
        thread.join(_JOIN_GRACE_SECONDS)
    if any(thread.is_alive() for thread in threads):
        raise RuntimeError(f"a worker did not stop within {_JOIN_GRACE_SECONDS} s of its deadline")
    if errors:
        raise errors[0]
    return Pass(sum(done), max(ended) - started, any(exhausted))


@dataclass(frozen=True, slots=True)
class Rate:
    """Operations per second of several passes; ``median`` is the number reported."""

    rates: tuple[float, ...]
    exhausted: bool

    @property
    def median(self) -> float:
        """The median pass."""
        return statistics.median(self.rates)

    def cell(self) -> str:
        """``median (min-max)``, flagged ``*`` if some worker ran out of prepared work."""
        flag = "*" if self.exhausted else ""
        if len(self.rates) == 1:
            return f"{self.median:,.0f}{flag}"
        return f"{self.median:,.0f} ({min(self.rates):,.0f}-{max(self.rates):,.0f}){flag}"


def measure(steps: Sequence[Step], timing: Timing) -> Rate:
    """A warm-up pass, then ``timing.runs`` timed passes over the same workers."""
    if timing.warmup > 0:
        run_pass(steps, timing.warmup)
    passes = [run_pass(steps, timing.seconds) for _ in range(timing.runs)]
    return Rate(tuple(p.rate for p in passes), any(p.exhausted for p in passes))


def median_seconds(action: Callable[[], object], runs: int, budget: float) -> list[float]:
    """Time ``action`` up to ``runs`` times, stopping early once ``budget`` seconds are spent."""
    times: list[float] = []
    spent_from = time.perf_counter()
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
        if time.perf_counter() - spent_from > budget:
            break
    return times


# --------------------------------------------------------------------------- profiles


def profile_pass(steps: Sequence[Step], seconds: float) -> pstats.Stats:
    """Profile every worker thread of one pass and merge their statistics."""
    profiles: list[cProfile.Profile] = []
    run_pass(steps, seconds, profiles)
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    return stats


def profile_call(action: Callable[[], object]) -> pstats.Stats:
    """Profile one call of ``action``."""
    profile = cProfile.Profile()
    profile.runcall(action)
    return pstats.Stats(profile)


def _where(file_name: str, line: int, name: str) -> str:
    if file_name == "~":
        return name  # a builtin: pstats names it like "<method 'execute' of ...>"
    path = file_name
    for marker in ("site-packages/", str(REPO) + "/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path}:{line})"


def profile_summary(stats: pstats.Stats, title: str, top: int = 15) -> str:
    """The ``top`` functions by own time and by cumulative time, as % of the profiled time."""
    profile = stats.get_stats_profile()
    total = profile.total_tt or 1e-9
    rows = [
        (
            fp.tottime,
            fp.cumtime,
            fp.ncalls,
            _where(fp.file_name, fp.line_number, name),
        )
        for name, fp in profile.func_profiles.items()
        # The harness itself would top the cumulative list without saying anything.
        if "benchmarks/" not in fp.file_name and "threading.py" not in fp.file_name
    ]
    lines = [f"cProfile: {title} (total {total:.2f} s profiled)"]
    for label, key in (("own time", 0), ("cumulative", 1)):
        lines.append(f"  top {top} by {label}:")
        lines.append("    own%   cum%      calls  function")
        for own, cum, calls, where in sorted(rows, key=lambda r: r[key], reverse=True)[:top]:
            lines.append(
                f"    {100 * own / total:5.1f}  {100 * cum / total:5.1f}  {calls:>9}  {where}"
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------- tables


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown pipe table (readable in a terminal, pasteable into docs)."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [f"### {title}", "", line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in rows]
    return "\n".join(out)


def mark(ok: bool) -> str:
    """The target verdict."""
    return "✅" if ok else "❌"


def rate_text(value: float) -> str:
    """A rate with thousands separators."""
    return f"{value:,.0f}"


def ratio_text(value: float) -> str:
    """A ratio like ``1.53x``."""
    return f"{value:.2f}x"


# --------------------------------------------------------------------------- stores


def _pg_parts() -> tuple[str, int, str, str]:
    parts = urlsplit(PG_URL)
    host = parts.hostname or "127.0.0.1"
    if host not in _LOOPBACK:
        raise SystemExit(f"NENJIM_BENCH_PG_URL must name a loopback host, not {host!r}")
    return host, parts.port or 5432, parts.username or "postgres", parts.path.lstrip("/")


def pg_problem() -> str | None:
    """Why PostgreSQL cannot be used (``None``: it answers)."""
    _pg_parts()
    try:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as error:
        return f"PostgreSQL at {PG_URL} does not answer: {error}".strip()
    return None


_schema_numbers = itertools.count(1)


@contextmanager
def pg_schema(tag: str) -> Iterator[str]:
    """A fresh scratch schema, dropped with everything in it afterwards."""
    _pg_parts()
    name = f"nenjim_bench_{os.getpid()}_{tag}_{next(_schema_numbers)}"
    drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
    with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(drop)


def pg_store_url(schema: str, *, pool_size: int = 2, max_overflow: int = 4) -> str:
    """A nenjim store URL for ``schema`` with a small pool (one per writer is enough)."""
    joiner = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{joiner}schema={schema}&pool_size={pool_size}&max_overflow={max_overflow}"


def pg_schema_bytes(schema: str) -> int:
    """Bytes of every table of ``schema`` (heap, TOAST and indexes) after ``VACUUM``."""
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            ).fetchall()
        ]
        total = 0
        for name in tables:
            qualified = f'"{schema}"."{name}"'
            conn.execute(f"VACUUM {qualified}")
            row = conn.execute(
                "SELECT pg_total_relation_size(%s::regclass)", (qualified,)
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


def pg_stock_env(schema: str, *, pool_size: int = 2, max_overflow: int = 4) -> dict[str, str]:
    """The stock ``eventsourcing`` environment for the same server and schema."""
    host, port, user, dbname = _pg_parts()
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": host,
        "POSTGRES_PORT": str(port),
        "POSTGRES_USER": user,
        "POSTGRES_PASSWORD": "",
        "POSTGRES_SCHEMA": schema,
        "POSTGRES_POOL_SIZE": str(pool_size),
        "POSTGRES_MAX_OVERFLOW": str(max_overflow),
    }


def sqlite_stock_env(path: Path) -> dict[str, str]:
    """The stock ``eventsourcing`` environment for a SQLite file (same lock timeout as ours)."""
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": "30",
    }


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A temporary directory for SQLite files and generated roots."""
    with tempfile.TemporaryDirectory(prefix="nenjim-bench-") as name:
        yield Path(name)


# --------------------------------------------------------------------------- Journal texts

_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_CONTENT = "sha256:" + "1" * 64


def journal_text(artifact: str, version: str, predecessor: str | None) -> str:
    """A small valid Journal text (~200 bytes) with one release every revision keeps."""
    lines = ["NENJIM-JOURNAL 1", f"ARTIFACT {artifact}", f"JOURNAL_VERSION {version}"]
    if predecessor is not None:
        lines.append(f"PREDECESSOR {predecessor}")
    lines += ["", "RELEASE 1.0.0", "  LICENSE MIT", f"  CONTENT {_CONTENT}"]
    return "\n".join(lines) + "\n"


def version_at(index: int, step_seconds: int = 60) -> str:
    """The Journal version ``index`` steps after the benchmark epoch."""
    moment = _EPOCH + timedelta(seconds=index * step_seconds)
    return (
        f"{moment.year:04d}{moment.month:02d}{moment.day:02d}"
        f"T{moment.hour:02d}{moment.minute:02d}{moment.second:02d}Z"
    )


def chain_texts(artifact: str, count: int, step_seconds: int = 60) -> list[str]:
    """``count`` texts of one artifact: a genesis, then successors with real predecessors."""
    texts: list[str] = []
    predecessor: str | None = None
    for index in range(count):
        text = journal_text(artifact, version_at(index, step_seconds), predecessor)
        texts.append(text)
        predecessor = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return texts


# --------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str:
    # Read-only queries; --no-optional-locks keeps status from touching the index.
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


def machine_info() -> list[tuple[str, str]]:
    """What the numbers were measured on."""
    pg = "not reachable"
    if pg_problem() is None:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), current_setting('synchronous_commit'),"
                " current_setting('shared_buffers'), current_setting('fsync')"
            ).fetchone()
        if row is not None:
            pg = f"{row[0]} (synchronous_commit={row[1]}, shared_buffers={row[2]}, fsync={row[3]})"
    probe = sqlite3.connect(":memory:")
    try:
        synchronous = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
            probe.execute("PRAGMA synchronous").fetchone()[0], "?"
        )
    finally:
        probe.close()
    changed = [line for line in _git("status", "--porcelain").splitlines() if line]
    return [
        ("cores (nproc)", str(len(os.sched_getaffinity(0)))),
        ("CPU", _cpu_model()),
        ("load average at start", " ".join(f"{x:.2f}" for x in os.getloadavg())),
        ("Python", platform.python_version()),
        ("eventsourcing", metadata.version("eventsourcing")),
        ("psycopg", metadata.version("psycopg")),
        ("SQLite", f"{sqlite3.sqlite_version} (default synchronous={synchronous})"),
        ("PostgreSQL", pg),
        ("commit", f"{_git('rev-parse', '--short', 'HEAD')} ({len(changed)} paths changed)"),
    ]


def machine_table(info: list[tuple[str, str]] | None = None) -> str:
    """The machine (``info``, else read now) as a two-column table."""
    pairs = machine_info() if info is None else info
    return table("Machine", ["what", "value"], [list(pair) for pair in pairs])
