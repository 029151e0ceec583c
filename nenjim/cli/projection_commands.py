"""``nenjim projections status|rebuild``: the persisted projections of a store.

- ``status`` prints each projection with its log, its position (the last
  event it applied), the log's head and the lag between them.
- ``rebuild NAME`` folds the whole log into a fresh table and swaps it in
  atomically (readers see the old table or the new one, never a half-built
  one), with a progress bar on a terminal.

Both take their store as every command does (``--store URL``, else
``$NENJIM_STORE_URL``; ``--journal NAME``: see :mod:`nenjim.cli.store_options`).
Neither creates a store: a missing one (or ``memory:``, which holds no
persisted projection) exits 3. An unknown NAME is bad usage (exit 2) and
names the known ones. ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from nenjim.admin import projections as projection_admin
from nenjim.admin import silent
from nenjim.admin.json_output import dumps
from nenjim.cli.exit import EXIT_CODES_HELP, EXIT_OK, UsageError
from nenjim.cli.progress import progress_for
from nenjim.cli.store_options import add_store_options, selected_store
from nenjim.cli.subcommand import add_subcommand
from nenjim.cli.table import format_table


def add_projection_commands(groups: Any) -> None:
    """Register the ``projections`` group on the top-level subparsers ``groups``."""
    projections = groups.add_parser(
        "projections",
        help="maintain read models",
        description="Maintain the persisted read models (projections) of a store.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = projections.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    status_summary = "List each projection: its log, its position, the log's head, the lag."
    rebuild_summary = (
        "Rebuild a projection from its whole log into a fresh table and swap it in atomically."
    )
    status = add_subcommand(commands, "status", show_status, status_summary)
    rebuild = add_subcommand(commands, "rebuild", rebuild_one, rebuild_summary)
    rebuild.add_argument(
        "name",
        metavar="NAME",
        help=f"the projection ({', '.join(projection_admin.projection_names())})",
    )
    for sub in (status, rebuild):
        add_store_options(
            sub,
            store="URL of an existing SQLite or PostgreSQL store",
            journal="the projections of this Journal's store, which must hold it",
        )
        sub.add_argument("--json", action="store_true", help="print one JSON object")


def show_status(args: argparse.Namespace) -> int:
    """Print where each projection of the store stands."""
    found = projection_admin.statuses(selected_store(args))
    if args.json:
        document = [
            {"name": s.name, "log": s.log, "position": s.position, "head": s.head, "lag": s.lag}
            for s in found
        ]
        sys.stdout.write(dumps({"projections": document}) + "\n")
        return EXIT_OK
    rows = [[s.name, s.log, str(s.position), str(s.head), str(s.lag)] for s in found]
    sys.stdout.write(format_table(rows, ["PROJECTION", "LOG", "POSITION", "HEAD", "LAG"]) + "\n")
    return EXIT_OK


def rebuild_one(args: argparse.Namespace) -> int:
    """Rebuild one projection and print its family's summary line."""
    if args.name not in projection_admin.projection_names():
        raise UsageError(
            f"unknown projection {args.name!r}; known: "
            f"{', '.join(projection_admin.projection_names())}",
            prog="nenjim projections rebuild",
        )
    progress = progress_for(sys.stderr)
    started = time.perf_counter()
    summary = projection_admin.rebuild(selected_store(args), args.name, progress or silent)
    seconds = time.perf_counter() - started
    if args.json:
        document = {"projection": args.name, "summary": summary, "seconds": seconds}
        sys.stdout.write(dumps(document) + "\n")
    else:
        sys.stdout.write(f"rebuilt {summary} in {seconds:.3f} s\n")
    return EXIT_OK
