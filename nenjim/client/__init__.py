"""Clients of a served Journal log (``nenjim journal verify-log``)."""
