"""The eight domain repositories, each bound to one storage view."""
