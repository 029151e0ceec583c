"""``python -m nenjim``: the same as the ``nenjim`` console script."""

from nenjim.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
