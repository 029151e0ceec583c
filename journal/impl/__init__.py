"""Implementations of the Journal API.

Public here is only ``nenjim.journal.impl.ref``, whose public names are its entry
points (``build_journal``, ``JournalAssembly``, ``JournalFollower``,
``move_root``); the submodules of ``nenjim.journal.impl.ref`` are implementation,
not API.
"""

__all__: list[str] = []


def __dir__() -> list[str]:
    # ``ref`` is the one public module here, an attribute once imported.
    return ["ref"] if "ref" in globals() else []
