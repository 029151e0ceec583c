"""How every command takes its store: one rule, one set of options, for every group.

- ``--store URL``, else ``$NENJIM_STORE_URL``. The commands that load a
  Journal root work in memory without either; every other command that
  takes a store needs one, and says so (bad usage, exit 2).
- ``--journal NAME`` selects the Journal named NAME: on PostgreSQL it lives
  in the schema ``journal_NAME`` unless the URL's ``?schema=`` names one,
  and the store must hold that Journal (a command that loads a root claims
  an empty store for it instead). ``projections`` and ``storage`` take the
  same option and select the same store, so what a named Journal's store
  holds is found where the Journal commands put it. ``log import`` has
  none: the Journal it imports is the one its file holds.
- A PostgreSQL URL needs the ``postgres`` extra: without psycopg every
  command says so in one line before doing anything (exit 3, kind ``extra``).
"""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit

from nenjim.cli.exit import EXIT_STORE, CommandError, UsageError
from nenjim.infrastructure.store.urls import (
    INSTALL_POSTGRES,
    STORE_URL_VARIABLE,
    redact,
)
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.impl.ref.log import (
    JournalLog,
    check_journal_name,
    journal_store_url,
    name_identity,
)

POSTGRES_SCHEMES = ("postgresql", "postgres")
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
            "--journal", metavar="NAME", type=_journal_name, help=f"{journal}: {JOURNAL_HELP}"
        )


def chosen_store(args: argparse.Namespace) -> str | None:
    """``--store``, else ``$NENJIM_STORE_URL``, else ``None``; ``None`` for a command
    that takes no store. A PostgreSQL store without psycopg is refused here."""
    if not hasattr(args, "store"):
        return None
    store: str | None = args.store or os.environ.get(STORE_URL_VARIABLE) or None
    if store is not None:
        _check_driver(store)
    return store


def required_store(args: argparse.Namespace) -> str:
    """The chosen store; bad usage (exit 2) when neither ``--store`` nor the variable gives one."""
    store = chosen_store(args)
    if store is None:
        raise UsageError(
            f"needs a store: --store URL or ${STORE_URL_VARIABLE}",
            prog=" ".join(["nenjim", args.group, *filter(None, [getattr(args, "command", None)])]),
        )
    return store


def journal_identity(args: argparse.Namespace) -> str | None:
    """The identity of the Journal named by ``--journal``, or ``None``."""
    name: str | None = getattr(args, "journal", None)
    return None if name is None else name_identity(name)


def selected_store(args: argparse.Namespace) -> str:
    """The required store, as the Journal named by ``--journal`` has it (see
    :func:`journal_store_url`), checked to hold that Journal."""
    store = required_store(args)
    identity = journal_identity(args)
    if identity is None:
        return store
    JournalLog(store, create=False, identity=identity).close()  # refuses another Journal
    return journal_store_url(store, identity)


def _check_driver(url: str) -> None:
    if urlsplit(url).scheme not in POSTGRES_SCHEMES:
        return
    try:
        import psycopg  # noqa: F401, PLC0415 - the postgres extra
    except ImportError:
        raise CommandError(f"{redact(url)}: {INSTALL_POSTGRES}", EXIT_STORE, "extra") from None


def _journal_name(text: str) -> str:
    try:
        return check_journal_name(text)
    except InvalidValueError as error:
        raise argparse.ArgumentTypeError(error.detail) from None
