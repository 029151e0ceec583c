"""``move_root``: give a Journal's store to the path its root moved to.

An unnamed Journal is its root's resolved path, so a root that moved (another
checkout path, another machine) finds its store refused. The move names both
paths, and is refused while the old path still holds the Journal: it exists
and holds a Journal file (``<artifact>/<name>.journal``), or cannot be read
to tell.
"""

from __future__ import annotations

import os
from pathlib import Path

from nenjim.domain.journal.errors import JournalStoreError
from nenjim.infrastructure.log import StoreIdentityError, resolve_store_url
from nenjim.journal.impl.ref.filesystem import REVISION_SUFFIX, check_root
from nenjim.journal.impl.ref.log import (
    JournalLog,
    describe_identity,
    identity_root,
    refusal,
    root_identity,
)
from nenjim.journal.impl.ref.store_errors import store_errors


def move_root(
    store: str, old_root: str | os.PathLike[str], new_root: str | os.PathLike[str]
) -> bool:
    """Give the store of the Journal of root ``old_root`` to ``new_root``, where that root
    now is; ``True`` if moved, ``False`` if the store belonged to ``new_root`` already.

    ``store`` is an existing store's URL. ``old_root`` is matched, as given
    and resolved, against the root the store records (the path need not exist
    any more). Raises ``JournalRootError`` unless ``new_root`` is an existing
    directory, and ``JournalStoreError``, changing nothing, when the store
    cannot be used, holds no Journal yet, holds a named Journal (which no root
    owns) or another root's, or while the old root still holds the Journal.
    """
    new = check_root(Path(os.path.abspath(os.fspath(new_root))))
    wanted = root_identity(str(new))
    old = os.path.abspath(os.fspath(old_root))
    with store_errors("the store URL"):
        where = resolve_store_url(store).where
    with store_errors(where):
        log = JournalLog(store, create=False)
    with log, store_errors(where):
        recorded = log.recorded_identity()
        if recorded == wanted:
            return False
        moving = _movable(where, recorded, old)
        try:
            log.replace_identity(moving, wanted)
        except StoreIdentityError as error:  # another move came first
            raise refusal(where, error.recorded, moving) from None
    return True


def _movable(where: str, recorded: str | None, old: str) -> str:
    """``recorded``, the identity to move; refused unless it is the old root's and the old
    root no longer holds the Journal."""
    if recorded is None:
        raise JournalStoreError(
            f"{where} holds no Journal yet: the first start that succeeds claims it"
        )
    recorded_root = identity_root(recorded)
    if recorded_root is None:
        raise JournalStoreError(
            f"{where} holds {describe_identity(recorded)}, which belongs to no root: "
            "every root that gives its name may use the store"
        )
    if recorded not in {root_identity(old), root_identity(os.path.realpath(old))}:
        raise JournalStoreError(
            f"{where} holds {describe_identity(recorded)}, not the Journal of root {old}"
        )
    if _holds_journal_files(recorded_root, where):
        raise JournalStoreError(
            f"{where} still belongs to root {recorded_root}: that directory exists and holds "
            "Journal files (move or remove it first, or use another store)"
        )
    return recorded


def _holds_journal_files(root: str, where: str) -> bool:
    """Whether ``root`` is a directory holding a file ``<artifact>/<name>.journal``."""
    try:
        with os.scandir(root) as entries:
            directories = [e.path for e in entries if not e.name.startswith(".") and e.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return False  # gone (or no directory): it holds nothing
    except OSError as error:
        raise _unreadable(where, root, error) from None
    for directory in directories:
        try:
            with os.scandir(directory) as files:
                if any(_is_revision_file(entry) for entry in files):
                    return True
        except FileNotFoundError:
            continue  # removed since the root was listed
        except OSError as error:
            raise _unreadable(where, directory, error) from None
    return False


def _unreadable(where: str, path: str, error: OSError) -> JournalStoreError:
    return JournalStoreError(
        f"{where} belongs to a root that cannot be read to tell whether it still holds "
        f"Journal files: {path}: {error.strerror or error}"
    )


def _is_revision_file(entry: os.DirEntry[str]) -> bool:
    return (
        entry.name.endswith(REVISION_SUFFIX) and not entry.name.startswith(".") and entry.is_file()
    )
