"""How every command takes its store: one set of options for every group, following the
rules of :mod:`nenjim.admin.stores`.

- ``--store URL``, else ``$NENJIM_STORE_URL``. The commands that load a
  Journal root work in memory without either; every other command that
  takes a store needs one, and says so (bad usage, exit 2).
- ``--journal NAME`` selects the Journal named NAME, and the store must hold
  it (a command that loads a root claims an empty store for it instead).
  ``projections`` and ``storage`` take the same option and select the same
  store, so what a named Journal's store holds is found where the Journal
  commands put it. ``log import`` has none: the Journal it imports is the
  one its file holds.
- A PostgreSQL URL needs the ``postgres`` extra: without psycopg every
  command says so in one line before doing anything (exit 3, kind ``extra``).
"""

from __future__ import annotations

import argparse

from nenjim.admin import stores
from nenjim.admin.stores import STORE_URL_VARIABLE, check_journal_name
from nenjim.cli.exit import UsageError
from nenjim.cli.subcommand import value_argument

JOURNAL_HELP = (
    "the Journal named NAME (a lowercase letter, then up to 47 of a-z 0-9 _; on PostgreSQL "
    "in the schema journal_NAME unless the URL has ?schema=)"
)


def add_store_options(
    parser: argparse.ArgumentParser,
    *,
    store: str,
    journal: str | None,
    in_memory: bool = False,
) -> None:
    """``--store URL`` (described by ``store``; ``in_memory``: the command works in
    memory without one) and, unless ``journal`` is ``None``, ``--journal NAME``
    (``journal`` says what the command does with it)."""
    default = f"${STORE_URL_VARIABLE}" + (", else in memory: no file" if in_memory else "")
    parser.add_argument("--store", metavar="URL", help=f"{store} (default: {default})")
    if journal is not None:
        parser.add_argument(
            "--journal",
            metavar="NAME",
            type=value_argument(check_journal_name),
            help=f"{journal}: {JOURNAL_HELP}",
        )


def chosen_store(args: argparse.Namespace) -> str | None:
    """The store of :func:`nenjim.admin.stores.chosen_store`; ``None`` for a command that
    takes no store."""
    return stores.chosen_store(args.store) if hasattr(args, "store") else None


def required_store(args: argparse.Namespace) -> str:
    """The chosen store; bad usage (exit 2) when neither ``--store`` nor the variable gives one."""
    store = chosen_store(args)
    if store is None:
        raise UsageError(
            f"needs a store: --store URL or ${STORE_URL_VARIABLE}",
            prog=" ".join(["nenjim", args.group, *filter(None, [getattr(args, "command", None)])]),
        )
    return store


def selected_store(args: argparse.Namespace) -> str:
    """The required store, as the Journal named by ``--journal`` has it, checked to hold
    that Journal (:func:`nenjim.admin.stores.journal_store`)."""
    return stores.journal_store(required_store(args), stores.journal_identity(args.journal))
