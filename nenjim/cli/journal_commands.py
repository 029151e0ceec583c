"""The ``nenjim`` subcommands: each takes parsed arguments and returns an exit code.

Without ``--store`` and ``$NENJIM_STORE_URL`` a command that loads a root
works in memory: it creates no store and no file (``new`` writes only the
draft it is asked for). Durable state is always a store the user named.
``audit`` only reads: it refuses a store that does not exist or holds no
Journal log instead of creating one, and writes nothing to one that does.
``append`` writes revisions into an existing Journal's store (or a new store of
a named Journal), judged as a root's files are. ``repair`` rebuilds what the
store derives from its log (the transparency tree, the chain projection), and
refuses while the log itself does not audit.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import AbstractContextManager
from pathlib import Path

from nenjim.admin import stores
from nenjim.admin.audits import (
    AuditReport,
    audit_journal_log,
    journal_problem,
    repair_journal_store,
)
from nenjim.admin.draft import draft_path, successor_text, utc_now, write_new_file
from nenjim.admin.json_output import (
    dumps,
    located_release_json,
    log_json,
    revision_json,
    verify_json,
)
from nenjim.admin.stores import JournalAssembly, journal_identity, redact
from nenjim.cli.exit import EXIT_FAILURE, EXIT_OK, CommandError, UsageError
from nenjim.cli.progress import progress_for
from nenjim.cli.store_options import chosen_store, required_store
from nenjim.cli.text import render_log, render_release, render_revision, render_verify
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, Sha256Digest


def open_journal(args: argparse.Namespace) -> AbstractContextManager[JournalAssembly]:
    """The Journal over ``args.root`` on the chosen store, loaded (see
    :func:`nenjim.admin.stores.open_journal`), with a progress bar on a terminal."""
    return stores.open_journal(
        args.root, store=chosen_store(args), journal=args.journal, progress=progress_for(sys.stderr)
    )


def verify(args: argparse.Namespace) -> int:
    """Load the whole root; report artifacts, revisions and heads."""
    with open_journal(args) as journal:
        service = journal.service
        chains = [service.revisions(c) for c in sorted(service.coordinates())]
        root = journal.manager.journal_root
        print(dumps(verify_json(root, chains)) if args.json else render_verify(root, chains))
    return EXIT_OK


def digest(args: argparse.Namespace) -> int:
    """Print the digest of a file's exact bytes."""
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
    value = str(Sha256Digest.of_bytes(data))
    print(dumps({"file": str(path), "digest": value}) if args.json else value)
    return EXIT_OK


def log(args: argparse.Namespace) -> int:
    """Print an artifact's chain as a table."""
    with open_journal(args) as journal:
        chain = journal.service.revisions(args.coordinate)
        if not chain:
            raise _unknown_artifact(args.coordinate, journal)
        print(dumps(log_json(chain)) if args.json else render_log(chain))
    return EXIT_OK


def show(args: argparse.Namespace) -> int:
    """Print the latest (or as-of) revision of an artifact."""
    with open_journal(args) as journal:
        revision = _select(journal, args.coordinate, args.as_of)
        print(dumps(revision_json(revision)) if args.json else render_revision(revision))
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
            print(dumps(located_release_json(revision, found)))
        else:
            print(render_release(revision, found))
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
        print(dumps(document))
    elif path is None:
        sys.stdout.write(text)
    else:
        print(str(path))
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
        required_store(args),
        identity=journal_identity(args.journal),
        progress=progress_for(sys.stderr),
    )
    summary = _audit_summary(report)
    derived = not report.ok and report.repairable
    if args.json:
        print(dumps({"ok": report.ok, **_audit_json(report), "derived": derived}))
    if not report.ok:
        hint = " (derived from the log: nenjim journal repair rebuilds it)" if derived else ""
        raise CommandError(
            f"audit failed after {summary}: {journal_problem(report)}{hint}", EXIT_FAILURE, "audit"
        )
    if not args.json:
        print(f"audit OK: {summary}")
    return EXIT_OK


def _audit_json(report: AuditReport) -> dict[str, object]:
    return {"problem": journal_problem(report), "events": report.events, **report.live}


def _audit_summary(report: AuditReport) -> str:
    live = report.live
    return f"{report.events} events, {live['revisions']} revisions of {live['artifacts']} artifacts"


def move_root(args: argparse.Namespace) -> int:
    """Give a store to the new path of the root that owns it."""
    store = required_store(args)
    moved = stores.move_root(store, args.old_root, args.new_root)
    new = os.path.realpath(args.new_root)
    if args.json:
        document = {
            "store": redact(store),
            "from": os.path.abspath(args.old_root),
            "to": new,
            "moved": moved,
        }
        print(dumps(document))
    elif moved:
        print(f"the store now belongs to root {new}")
    else:
        print(f"the store already belongs to root {new}")
    return EXIT_OK


def repair(args: argparse.Namespace) -> int:
    """Rebuild what the store derives from its log when only that is damaged."""
    result = repair_journal_store(
        required_store(args),
        identity=journal_identity(args.journal),
        progress=progress_for(sys.stderr),
    )
    before = result.before
    summary = _audit_summary(before)
    if args.json:
        print(dumps({"repaired": result.repaired, **_audit_json(before)}))
    elif not result.repaired:
        print(f"repair: nothing to do: {summary}")
    else:
        print(f"fixed: {journal_problem(before)}")
        print(f"repaired: rebuilt the transparency tree and the chain projection of {summary}")
    return EXIT_OK


def append(args: argparse.Namespace) -> int:
    """Append revision files (and a text on standard input) to a durable Journal's store."""
    if not args.files and not args.stdin:
        raise UsageError("needs FILE... or --stdin", prog="nenjim journal append")
    store = required_store(args)
    text = sys.stdin.buffer.read() if args.stdin else None
    given = len(args.files) + (text is not None)
    appended = stores.append_revisions(store, args.files, text, journal=args.journal)
    if args.json:
        document = {
            "store": redact(store),
            "appended": [
                {
                    "coordinate": str(revision.coordinate),
                    "journal_version": str(revision.version),
                    "digest": str(revision.digest),
                }
                for revision in appended
            ],
            "already_accepted": given - len(appended),
        }
        print(dumps(document))
    else:
        for revision in appended:
            print(f"{revision.coordinate} {revision.version} {revision.digest}")
        print(f"appended {len(appended)} of {given} revisions to {redact(store)}")
    return EXIT_OK
