"""The ``as_of`` benchmark: ``as_of`` latency on an artifact with 10,000 revisions (in process).

The chain is written as 10,000 files of one artifact and loaded through the
public path (``build_journal(root, store="memory:")`` + ``start()``); a
``ChainSnapshot.from_revisions`` built directly from the parsed revisions is timed too.
Each sample times one lookup at a random version (uniform over the chain's
span, a little before and after it) with ``time.perf_counter_ns``; samples
are bounded in count and time. The garbage collector stays on, as it would
in a service, so rare pauses show in p99.9 and max.

Run: ``python -m benchmarks.as_of [--quick] [--no-profile]``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Options,
    chain_texts,
    machine_table,
    mark,
    parse_options,
    profile_call,
    profile_summary,
    scratch_dir,
    table,
    version_at,
)
from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.values import ArtifactCoordinate, JournalVersion
from nenjim.journal.impl.ref import build_journal
from nenjim.projections.journal_chains import ChainSnapshot

TARGET_P99_US = 10.0
REVISIONS = 10_000
STEP_SECONDS = 3_600  # one revision an hour: the chain spans ~14 months
ARTIFACT = "bench.asof.chain"
FULL_SAMPLES, FULL_SECONDS = 200_000, 2.0
QUICK_SAMPLES, QUICK_SECONDS = 30_000, 0.4
_POOL = 8_192  # distinct random versions, cycled


def sample_ns(
    call: Callable[..., Any], args: Sequence[tuple[Any, ...]], limit: int, seconds: float
) -> list[int]:
    """Durations of ``call(*args[i % len(args)])`` in ns, until ``limit`` samples or ``seconds``."""
    clock = time.perf_counter_ns
    durations = [0] * limit  # allocated up front so the loop does not grow a list
    deadline = clock() + int(seconds * 1e9)
    count = len(args)
    taken = 0
    while taken < limit:
        arguments = args[taken % count]
        started = clock()
        call(*arguments)
        ended = clock()
        durations[taken] = ended - started
        taken += 1
        if ended > deadline:
            break
    return sorted(durations[:taken])


def _percentile(ordered: Sequence[int], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1_000


def _noop(*_: object) -> None:
    return None


def _write_chain(root: Path, texts: Sequence[str], versions: Sequence[str]) -> None:
    directory = root / ARTIFACT
    directory.mkdir(parents=True)
    for version, text in zip(versions, texts, strict=True):
        (directory / f"{version}.journal").write_bytes(text.encode("utf-8"))


def run(options: Options) -> str:
    """Run the ``as_of`` benchmark and return its report."""
    limit, seconds = (
        (QUICK_SAMPLES, QUICK_SECONDS) if options.quick else (FULL_SAMPLES, FULL_SECONDS)
    )
    rng = random.Random(3)
    texts = chain_texts(ARTIFACT, REVISIONS, STEP_SECONDS)
    versions = [version_at(i, STEP_SECONDS) for i in range(REVISIONS)]
    revisions = tuple(parse_journal(t) for t in texts)
    coordinate = ArtifactCoordinate(ARTIFACT)
    snapshot = ChainSnapshot.from_revisions(revisions)
    # Random instants over the span plus a margin, at any second (mostly between revisions).
    span = REVISIONS * STEP_SECONDS
    margin = 50 * STEP_SECONDS
    wanted = [_version(rng, span, margin) for _ in range(_POOL)]
    wanted_values = [JournalVersion(v) for v in wanted]
    out: list[str] = []
    with scratch_dir() as directory:
        root = directory / "root"
        _write_chain(root, texts, versions)
        assembly = build_journal(root, store="memory:")
        started = time.perf_counter()
        assembly.process.start()
        loaded = time.perf_counter() - started
        service = assembly.service
        try:
            if len(service.revisions(ARTIFACT)) != REVISIONS:
                raise RuntimeError("the chain did not load completely")
            for text, value in zip(wanted[:200], wanted_values[:200], strict=True):
                expected = snapshot.as_of(value)
                if service.as_of(ARTIFACT, text) != expected or (
                    expected is not None and expected.version > value
                ):
                    raise RuntimeError(f"as_of disagrees at {text}")
            variants: list[tuple[str, Callable[..., Any], list[tuple[Any, ...]]]] = [
                (
                    "(timer + call overhead: an empty function)",
                    _noop,
                    [(v,) for v in wanted_values],
                ),
                (
                    "`ChainSnapshot.as_of(JournalVersion)`",
                    snapshot.as_of,
                    [(v,) for v in wanted_values],
                ),
                (
                    "`JournalService.as_of(ArtifactCoordinate, JournalVersion)`",
                    service.as_of,
                    [(coordinate, v) for v in wanted_values],
                ),
                (
                    "`JournalService.as_of(str, str)`",
                    service.as_of,
                    [(ARTIFACT, v) for v in wanted],
                ),
            ]
            rows = []
            p99s: dict[str, float] = {}
            for label, call, args in variants:
                sample_ns(call, args, min(limit, 5_000), 0.1)  # warm caches
                ordered = sample_ns(call, args, limit, seconds)
                p99s[label] = _percentile(ordered, 0.99)
                rows.append(
                    [
                        label,
                        f"{len(ordered):,}",
                        f"{_percentile(ordered, 0.50):.2f}",
                        f"{p99s[label]:.2f}",
                        f"{_percentile(ordered, 0.999):.2f}",
                        f"{ordered[-1] / 1_000:.1f}",
                    ]
                )
            worst_label = max((k for k in p99s if not k.startswith("(")), key=lambda k: p99s[k])
            worst = p99s[worst_label]
            out.append(
                table(
                    f"as_of latency, one artifact with {REVISIONS:,} revisions (µs)",
                    ["lookup", "samples", "p50", "p99", "p99.9", "max"],
                    rows,
                )
            )
            out.append(
                table(
                    "as_of target",
                    ["target", "wanted", "measured", ""],
                    [
                        [
                            f"as_of p99 (worst lookup: {worst_label})",
                            f"<= {TARGET_P99_US:.0f} µs",
                            f"{worst:.2f} µs",
                            mark(worst <= TARGET_P99_US),
                        ]
                    ],
                )
            )
            out.append(
                f"The chain loaded through `start()` on `memory:` in {loaded:.2f} s "
                f"({REVISIONS / loaded:,.0f} revisions/s, one artifact)."
            )
            if options.profile and worst > TARGET_P99_US:
                stats = profile_call(
                    lambda: sample_ns(service.as_of, [(ARTIFACT, v) for v in wanted], 50_000, 1.0)
                )
                out.append(profile_summary(stats, "JournalService.as_of(str, str)"))
        finally:
            assembly.process.stop()
    return "\n\n".join(out)


def _version(rng: random.Random, span: int, margin: int) -> str:
    return version_at(rng.randrange(-margin, span + margin), 1)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    options = parse_options(argv, __doc__.splitlines()[0] if __doc__ else "as_of")
    print(machine_table(), end="\n\n", flush=True)
    print(run(options), flush=True)


if __name__ == "__main__":
    main()
