"""``python -m nenjim``: the same as the ``nenjim`` console script."""

from nenjim.cli import entry

if __name__ == "__main__":
    entry()
