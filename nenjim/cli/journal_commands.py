"""The ``nenjim`` subcommands: each takes parsed arguments and returns an exit code.

Without ``--store`` and ``$NENJIM_STORE_URL`` a command that loads a root
works in memory: it creates no store and no file (``new`` writes only the
draft it is asked for). Durable state is always a store the user named.
``audit`` only reads: it refuses a store that does not exist or holds no
Journal log instead of creating one, and writes nothing to one that does.
``repair`` is the explicit writer: it rebuilds what the store derives from
its log (the transparency tree, the chain projection), and refuses while the
log itself does not audit.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nenjim.admin.json_output import (
    dumps,
    located_release_json,
    log_json,
    revision_json,
    verify_json,
)
from nenjim.cli.draft import draft_path, successor_text, utc_now, write_new_file
from nenjim.cli.exit import EXIT_FAILURE, EXIT_OK, CommandError
from nenjim.cli.progress import progress_for
from nenjim.cli.store_options import chosen_store, journal_identity, required_store
from nenjim.cli.text import render_log, render_release, render_revision, render_verify
from nenjim.infrastructure.store.urls import redact
from nenjim.journal.impl.ref import JournalAssembly, build_journal
from nenjim.journal.impl.ref import move_root as move_journal_root
from nenjim.journal.impl.ref.audit import audit_journal_log
from nenjim.journal.impl.ref.repair import repair_journal_store
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, Sha256Digest


@contextmanager
def open_journal(args: argparse.Namespace) -> Iterator[JournalAssembly]:
    """Build the Journal over ``args.root``, start it (loading everything), stop it afterwards."""
    assembly = build_journal(
        args.root,
        store=chosen_store(args),
        journal=args.journal,
        progress=progress_for(sys.stderr),
    )
    try:
        assembly.process.start()
        yield assembly
    finally:
        assembly.process.stop()


def verify(args: argparse.Namespace) -> int:
    """Load the whole root; report artifacts, revisions and heads."""
    with open_journal(args) as journal:
        service = journal.service
        chains = [service.revisions(c) for c in sorted(service.coordinates())]
        root = journal.manager.journal_root
        _print(dumps(verify_json(root, chains)) if args.json else render_verify(root, chains))
    return EXIT_OK


def digest(args: argparse.Namespace) -> int:
    """Print the digest of a file's exact bytes."""
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
    value = str(Sha256Digest.of_bytes(data))
    _print(dumps({"file": str(path), "digest": value}) if args.json else value)
    return EXIT_OK


def log(args: argparse.Namespace) -> int:
    """Print an artifact's chain as a table."""
    with open_journal(args) as journal:
        chain = journal.service.revisions(args.coordinate)
        if not chain:
            raise _unknown_artifact(args.coordinate, journal)
        _print(dumps(log_json(chain)) if args.json else render_log(chain))
    return EXIT_OK


def show(args: argparse.Namespace) -> int:
    """Print the latest (or as-of) revision of an artifact."""
    with open_journal(args) as journal:
        revision = _select(journal, args.coordinate, args.as_of)
        _print(dumps(revision_json(revision)) if args.json else render_revision(revision))
    return EXIT_OK


def release(args: argparse.Namespace) -> int:
    """Print one release of the latest (or as-of) revision of an artifact."""
    with open_journal(args) as journal:
        revision = _select(journal, args.coordinate, args.as_of)
        found = revision.release(args.version)
        if found is None:
            raise CommandError(
                f"artifact {revision.coordinate} has no release {args.version} "
                f"in revision {revision.version}"
            )
        if args.json:
            _print(dumps(located_release_json(revision, found)))
        else:
            _print(render_release(revision, found))
    return EXIT_OK


def new(args: argparse.Namespace) -> int:
    """Draft a successor of the head; write it as a new revision file or print it."""
    with open_journal(args) as journal:
        head = journal.service.latest(args.coordinate)
        if head is None:
            raise _unknown_artifact(args.coordinate, journal)
        version, text = successor_text(head, utc_now())
        path = None if args.stdout else draft_path(journal.manager.journal_root, head, version)
    if path is not None:
        try:
            write_new_file(path, text)
        except FileExistsError:
            raise CommandError(f"refusing to overwrite existing file {path}") from None
        except OSError as error:
            raise CommandError(f"cannot write {path}: {error.strerror}") from None
    if args.json:
        document: dict[str, object] = {
            "coordinate": str(head.coordinate),
            "journal_version": str(version),
            "predecessor": str(head.digest),
            "text": text,
            "path": None if path is None else str(path),
        }
        _print(dumps(document))
    elif path is None:
        sys.stdout.write(text)
    else:
        _print(str(path))
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
    report = audit_journal_log(
        required_store(args), identity=journal_identity(args), progress=progress_for(sys.stderr)
    )
    summary = (
        f"{report.events} events, {report.revisions} revisions of {report.artifacts} artifacts"
    )
    if args.json:
        _print(
            dumps(
                {
                    "ok": report.ok,
                    "problem": report.problem,
                    "events": report.events,
                    "artifacts": report.artifacts,
                    "revisions": report.revisions,
                    "derived": report.derived,
                }
            )
        )
    if not report.ok:
        hint = " (derived from the log: nenjim journal repair rebuilds it)"
        hint = hint if report.derived else ""
        raise CommandError(
            f"audit failed after {summary}: {report.problem}{hint}", EXIT_FAILURE, "audit"
        )
    if not args.json:
        _print(f"audit OK: {summary}")
    return EXIT_OK


def move_root(args: argparse.Namespace) -> int:
    """Give a store to the new path of the root that owns it."""
    store = required_store(args)
    moved = move_journal_root(store, args.old_root, args.new_root)
    new = os.path.realpath(args.new_root)
    if args.json:
        document = {
            "store": redact(store),
            "from": os.path.abspath(args.old_root),
            "to": new,
            "moved": moved,
        }
        _print(dumps(document))
    elif moved:
        _print(f"the store now belongs to root {new}")
    else:
        _print(f"the store already belongs to root {new}")
    return EXIT_OK


def repair(args: argparse.Namespace) -> int:
    """Rebuild what the store derives from its log when only that is damaged."""
    result = repair_journal_store(
        required_store(args), identity=journal_identity(args), progress=progress_for(sys.stderr)
    )
    before = result.before
    summary = (
        f"{before.events} events, {before.revisions} revisions of {before.artifacts} artifacts"
    )
    if args.json:
        _print(
            dumps(
                {
                    "repaired": result.repaired,
                    "problem": before.problem,
                    "events": before.events,
                    "artifacts": before.artifacts,
                    "revisions": before.revisions,
                }
            )
        )
    elif not result.repaired:
        _print(f"repair: nothing to do: {summary}")
    else:
        _print(f"fixed: {before.problem}")
        _print(f"repaired: rebuilt the transparency tree and the chain projection of {summary}")
    return EXIT_OK


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")
