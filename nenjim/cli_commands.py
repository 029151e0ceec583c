"""The ``nenjim journal`` subcommands: each takes parsed arguments and returns an exit code."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infrastructure.log.urls import STORE_URL_VARIABLE
from journal.impl.ref import JournalAssembly, build_journal
from journal.impl.ref.audit import audit_journal_log
from journal.impl.ref.rebuild import rebuild_chain_projection
from journal.model import JournalRevision
from journal.valuetypes import ArtifactCoordinate, JournalVersion, Sha256Digest
from nenjim.cli_draft import draft_path, successor_text, utc_now, write_new_file
from nenjim.cli_json import dumps, release_json, revision_json
from nenjim.cli_text import render_log, render_release, render_revision, render_verify

DEFAULT_STORE_DIRECTORY = Path("var")
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class CommandError(Exception):
    """A failure to report as one line on stderr, with the exit code to end with."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def store_for(root: str, store: str | None) -> str:
    """``--store``, else ``$NENJIM_STORE_URL``, else an SQLite file under ``var/`` for ``root``.

    The default file is per root (named by a hash of its absolute path), so
    two unrelated roots never meet in one log.
    """
    chosen = store or os.environ.get(STORE_URL_VARIABLE)
    if chosen:
        return chosen
    absolute = os.path.abspath(root)
    tag = hashlib.sha256(absolute.encode()).hexdigest()[:12]
    DEFAULT_STORE_DIRECTORY.mkdir(parents=True, exist_ok=True)
    return f"sqlite:{DEFAULT_STORE_DIRECTORY / f'journal-{Path(absolute).name}-{tag}.db'}"


@contextmanager
def open_journal(root: str, store: str | None) -> Iterator[JournalAssembly]:
    """Build the Journal over ``root``, start it (loading everything), stop it afterwards."""
    try:
        assembly = build_journal(root, store=store_for(root, store))
    except ValueError as error:  # an unusable store URL is a bad argument, not a Journal error
        raise CommandError(f"argument --store: {error}", EXIT_USAGE) from None
    try:
        assembly.process.start()
        yield assembly
    finally:
        assembly.process.stop()


def verify(args: argparse.Namespace) -> int:
    """Load the whole root; report artifacts, revisions and heads."""
    with open_journal(args.root, args.store) as journal:
        service = journal.service
        chains = [service.revisions(c) for c in sorted(service.coordinates())]
        print(render_verify(journal.manager.journal_root, chains))
    return EXIT_OK


def digest(args: argparse.Namespace) -> int:
    """Print the digest of a file's exact bytes."""
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
    print(Sha256Digest.of_bytes(data))
    return EXIT_OK


def log(args: argparse.Namespace) -> int:
    """Print an artifact's chain as a table."""
    with open_journal(args.root, args.store) as journal:
        chain = journal.service.revisions(args.coordinate)
        if not chain:
            raise _unknown_artifact(args.coordinate, journal)
        print(render_log(chain))
    return EXIT_OK


def show(args: argparse.Namespace) -> int:
    """Print the latest (or as-of) revision of an artifact."""
    with open_journal(args.root, args.store) as journal:
        revision = _select(journal, args.coordinate, args.as_of)
        print(dumps(revision_json(revision)) if args.json else render_revision(revision))
    return EXIT_OK


def release(args: argparse.Namespace) -> int:
    """Print one release of the latest (or as-of) revision of an artifact."""
    with open_journal(args.root, args.store) as journal:
        revision = _select(journal, args.coordinate, args.as_of)
        found = revision.release(args.version)
        if found is None:
            raise CommandError(
                f"artifact {revision.coordinate} has no release {args.version} "
                f"in revision {revision.version}"
            )
        print(dumps(release_json(found)) if args.json else render_release(revision, found))
    return EXIT_OK


def new(args: argparse.Namespace) -> int:
    """Draft a successor of the head; write it as a new revision file or print it."""
    with open_journal(args.root, args.store) as journal:
        head = journal.service.latest(args.coordinate)
        if head is None:
            raise _unknown_artifact(args.coordinate, journal)
        version, text = successor_text(head, utc_now())
        if args.stdout:
            sys.stdout.write(text)
            return EXIT_OK
        path = draft_path(journal.manager.journal_root, head, version)
    try:
        write_new_file(path, text)
    except FileExistsError:
        raise CommandError(f"refusing to overwrite existing file {path}") from None
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror}") from None
    print(path)
    return EXIT_OK


def _select(
    journal: JournalAssembly, coordinate: ArtifactCoordinate, as_of: JournalVersion | None
) -> JournalRevision:
    """The head, or the newest revision at or before ``as_of``; a ``CommandError`` if none."""
    service = journal.service
    revision = service.latest(coordinate) if as_of is None else service.as_of(coordinate, as_of)
    if revision is not None:
        return revision
    genesis = next(iter(service.revisions(coordinate)), None)
    if genesis is None:
        raise _unknown_artifact(coordinate, journal)
    raise CommandError(
        f"artifact {coordinate} has no revision as of {as_of} (its genesis is {genesis.version})"
    )


def _unknown_artifact(coordinate: ArtifactCoordinate, journal: JournalAssembly) -> CommandError:
    return CommandError(
        f"unknown artifact {coordinate}: no revisions under {journal.manager.journal_root}"
    )


def audit(args: argparse.Namespace) -> int:
    """Re-check every logged text, digest, chain link and digest claim of a store."""
    report = audit_journal_log(args.store)
    summary = (
        f"{report.events} events, {report.revisions} revisions of {report.artifacts} artifacts"
    )
    if not report.ok:
        raise CommandError(f"audit failed after {summary}: {report.problem}")
    print(f"audit OK: {summary}")
    return EXIT_OK


def rebuild(args: argparse.Namespace) -> int:
    """Rebuild the chain projection from the log and report its size and speed."""
    report = rebuild_chain_projection(args.store)
    events = report.view.position
    rate = events / report.seconds if report.seconds > 0 else float("inf")
    print(
        f"rebuilt journal-chains: {report.revisions} revisions of "
        f"{len(report.view.chains)} artifacts from {events} events "
        f"in {report.seconds:.3f} s ({rate:,.0f} events/s)"
    )
    return EXIT_OK
