"""Errors and warnings raised by the readers."""


class FTDCError(Exception):
    """The input cannot be read as FTDC at all (missing path, no FTDC files, not FTDC)."""


class FTDCWarning(UserWarning):
    """Part of the input was damaged or unusual; everything intact was still read."""


class UnmatchedMetric(FTDCWarning):
    """A metric name or glob that matches no metric (the CLI makes it an error)."""


def require_documents(files: list, documents: int, problems: list[str]) -> None:
    """Raise when not one file held an FTDC document: the input is not FTDC."""
    if files and documents == 0:
        detail = problems[0] if problems else ", ".join(str(f.path) for f in files) + ": empty"
        raise FTDCError(f"not FTDC data: {detail}")
