"""Implementations of the Journal API.

Public here are only ``journal.impl.ref.build_journal`` and
``journal.impl.ref.JournalAssembly``, the construction entry point; the
submodules of ``journal.impl.ref`` are implementation, not API.
"""
