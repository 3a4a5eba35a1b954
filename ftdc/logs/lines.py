"""The text of chosen lines of a log, read again by their numbers: a report shows the slowest runs' lines as
mongod wrote them, which the decoded frames do not hold (they keep the fields, not the line).

Only the lines asked for are kept, each up to MAX_TEXT_BYTES; a file is read up to its last wanted line, its
newlines counted a chunk at a time, so the cost is one more pass over the bytes, not a decode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .sources import expand, read_chunks_until_cut

# What a line keeps: mongod writes each attribute up to maxLogSizeKB (10 KB by default), so a slow-query line of the
# default settings fits whole, and a crafted line without a newline costs no more than this.
MAX_TEXT_BYTES = 16 << 10


def _said(text: bytearray, dropped: int) -> str:
    said = bytes(text).rstrip(b"\r").decode("utf-8", errors="replace")
    return said + (f" … ({dropped:,} more bytes)" if dropped else "")


def _file_lines(chunks: Iterable[bytes], wanted: list[int]) -> dict[int, str]:
    """The lines numbered `wanted` (sorted, from 1) of a file given as chunks of its bytes."""
    found: dict[int, str] = {}
    at, line = 0, 1  # the next wanted line (its index), the number of the line that starts at `pos`
    text: bytearray | None = None  # the wanted line being read
    dropped = 0
    for chunk in chunks:
        pos = 0
        while True:
            if text is not None:
                newline = chunk.find(b"\n", pos)
                end = len(chunk) if newline < 0 else newline
                room = max(0, MAX_TEXT_BYTES - len(text))
                text += chunk[pos : pos + min(room, end - pos)]
                dropped += max(0, end - pos - room)
                if newline < 0:
                    break
                found[wanted[at]] = _said(text, dropped)
                text, dropped, pos, line, at = None, 0, newline + 1, line + 1, at + 1
                continue
            if at == len(wanted):
                return found
            target = wanted[at]
            if target < line:  # asked for twice
                at += 1
                continue
            if target == line:
                text = bytearray()
                continue
            newlines = chunk.count(b"\n", pos)
            if newlines < target - line:
                line += newlines
                break
            for _ in range(target - line):
                pos = chunk.find(b"\n", pos) + 1
            line = target
    if text:  # the file's last line, without a newline (nothing after the last newline is no line)
        found[wanted[at]] = _said(text, dropped)
    return found


def line_texts(paths, wanted: Mapping[str, Iterable[int]]) -> dict[tuple[str, int], str]:
    """The text of each line `wanted` names (file as the frames' `file` column names it, and its line numbers),
    as `read_logs` numbered them; a file or line that is gone is left out."""
    texts: dict[tuple[str, int], str] = {}
    for source in expand(paths):
        numbers = sorted(set(wanted.get(source.name, ())))
        if numbers:
            chunks = read_chunks_until_cut(source, None, lambda _: None)
            try:
                found = _file_lines(chunks, numbers)
            except OSError:  # the file changed or went away since it was read: its lines are not shown
                continue
            finally:
                chunks.close()
            texts.update(((source.name, n), text) for n, text in found.items())
    return texts
