"""The domain: values and rules, free of I/O and databases.

It imports nothing of this project outside itself (no ``infrastructure``,
``journal``, ``projections`` or ``nenjim``) and no database driver; the
import contracts in ``pyproject.toml`` hold it to that.
"""
