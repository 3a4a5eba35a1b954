"""Errors and warnings raised by the readers."""


class FTDCError(Exception):
    """The input cannot be read as FTDC at all (missing path, no FTDC files, not FTDC)."""


class FTDCWarning(UserWarning):
    """Part of the input was damaged or unusual; everything intact was still read."""
