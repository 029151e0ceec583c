"""nenjim: the application package (command line)."""
