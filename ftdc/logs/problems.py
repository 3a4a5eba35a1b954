"""Lines that could not be read, with where they are and why."""

import polars as pl

from .. import _native
from .schema import PROBLEMS

# Enough of a bad line to recognise it, not a whole 10 KB attribute dump.
SNIPPET_BYTES = 200
# Problems listed per ProblemLog (a block or a text file), as the native decoder lists
# per block; a binary file would otherwise list one per "line". The rest are counted
# in one closing row.
MAX_LISTED = _native.MAX_LISTED_PROBLEMS


class ProblemLog:
    """Problems of one source, numbered by line."""

    def __init__(self, file: str):
        self.file = file
        self.lines: list[int | None] = []
        self.reasons: list[str] = []
        self.texts: list[str | None] = []
        self.unlisted = 0

    def add(self, line: int | None, reason: str, text: bytes | str | None) -> None:
        if len(self.lines) >= MAX_LISTED:
            self.unlisted += 1
            return
        if isinstance(text, bytes):
            text = text[:SNIPPET_BYTES].decode("utf-8", "replace")
        elif text is not None:
            text = text[:SNIPPET_BYTES]
        self.lines.append(line)
        self.reasons.append(reason)
        self.texts.append(text)

    def count_unlisted(self, problems: int) -> None:
        """Problems counted, not listed, elsewhere (the native decoder's past its own limit)."""
        self.unlisted += problems

    def frame(self) -> pl.DataFrame:
        if self.unlisted:
            self.lines.append(None)
            self.reasons.append(f"{self.unlisted} more problems not listed")
            self.texts.append(None)
            self.unlisted = 0
        return pl.DataFrame(
            {"file": [self.file] * len(self.lines), "line": self.lines, "reason": self.reasons, "text": self.texts},
            schema=PROBLEMS,
        )
