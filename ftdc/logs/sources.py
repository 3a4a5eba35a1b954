"""Find the log files behind the given paths and read them in line-aligned blocks.

Handles plain files, `.gz` (every member of a multi-member file, as Atlas
writes them), rotated sets (`mongod.log.<date>` before the live `mongod.log`),
directories, and `.tar`/`.tar.gz` archives holding several nodes' logs.
"""

import datetime as dt
import os
import re
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

BLOCK_BYTES = 16 << 20
_READ_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_ROTATED = re.compile(r"^(?P<stem>.*?\.log)(?:\.(?P<suffix>.+?))?(?:\.gz)?$")
# FTDC and other binary siblings that a directory of logs may hold.
_SKIP_DIRS = {"diagnostic.data"}


class SourceError(FileNotFoundError):
    """A path that does not exist."""


class NotALog(ValueError):
    """Nothing in the input is a mongod log line (an FTDC file, random bytes, an empty file or archive)."""


class LogWarning(UserWarning):
    """Part of the input held no log line; the rest was read."""


@dataclass
class LogSource:
    """One log file, possibly inside an archive or compressed."""

    name: str  # what `file` columns show: the path, or "archive.tar!member"
    group: str  # files of one node share a group: their directory or archive folder
    size: int  # bytes on disk (compressed size for .gz), for progress
    mtime: float
    open: Callable[[], object]  # a binary file object positioned at the start
    path: Path | None = None  # a file of its own (not an archive member): it can be re-read by offset


class TruncatedGzip(Exception):
    """The gzip stream ended before its end marker; the data read so far is valid."""


def read_chunks_until_cut(source: LogSource, on_bytes, on_cut: Callable[[str], None]) -> Iterator[bytes]:
    """read_chunks, ending quietly at a cut gzip stream after reporting it to `on_cut`.

    Everything decompressed before the cut still reaches the caller, so the lines
    before it are decoded and only the last, partial line is a problem.
    """
    try:
        yield from read_chunks(source, on_bytes)
    except TruncatedGzip as exc:
        on_cut(str(exc))


def expand(paths) -> list[LogSource]:
    """LogSources for files, directories and archives, in a stable order; a
    file named twice (or also inside a named directory) is read once."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    sources: list[LogSource] = []
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise SourceError(f"no such file or directory: {path}")
        if path.is_dir():
            files = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                files.extend(Path(root) / name for name in names if _looks_like_log(name))
            if not files:
                raise SourceError(f"{path}: no log files (*.log*, *.gz, *.tar) in this directory")
            found = sorted(files, key=_rotation_order)
        else:
            found = [path]
        for file in found:
            if os.path.realpath(file) not in seen:
                seen.add(os.path.realpath(file))
                sources.extend(_file_sources(file))
    return sources


def _looks_like_log(name: str) -> bool:
    # Directory scans skip .json: it is what tools write beside logs (reports,
    # EXPECTED.json), never mongod's own log name. Named files are always read.
    return ".log" in name or name.endswith((".gz", ".tar", ".tgz"))


def _rotation_order(path: Path):
    """Rotated files (`x.log.<suffix>`) sort before the live `x.log` they came
    from, oldest first: timestamp suffixes in order, logrotate's numbered
    ones (`.1` newest) from the highest number down."""
    m = _ROTATED.match(path.name)
    if m is None:
        return (str(path.parent), path.name, 0, 0, "")
    suffix = m.group("suffix")
    live = suffix is None
    number = -int(suffix) if suffix and suffix.isdigit() else 0
    return (str(path.parent), m.group("stem"), 1 if live else 0, number, suffix or "")


def _file_sources(path: Path) -> list[LogSource]:
    stat = path.stat()
    if tarfile.is_tarfile(path):
        return _tar_sources(path)
    return [LogSource(str(path), str(path.parent), stat.st_size, stat.st_mtime, lambda: open(path, "rb"), path)]


def _tar_sources(path: Path) -> list[LogSource]:
    with tarfile.open(path, "r:*") as archive:
        members = [m for m in archive.getmembers() if m.isfile() and _looks_like_log(Path(m.name).name)]
    members.sort(key=lambda m: _rotation_order(Path(m.name)))

    def opener(member_name: str):
        def open_member():
            archive = tarfile.open(path, "r:*")
            handle = archive.extractfile(member_name)
            return _ClosingMember(handle, archive)
        return open_member

    return [
        LogSource(f"{path}!{m.name}", f"{path}!{os.path.dirname(m.name)}", m.size, float(m.mtime), opener(m.name))
        for m in members
    ]


class _ClosingMember:
    """A tar member's file object that also closes its archive."""

    def __init__(self, handle, archive):
        self._handle, self._archive = handle, archive

    def read(self, size: int = -1) -> bytes:
        return self._handle.read(size)

    def close(self) -> None:
        self._handle.close()
        self._archive.close()


def year_of(source: LogSource) -> int:
    return dt.datetime.fromtimestamp(source.mtime, dt.timezone.utc).year


def read_chunks(source: LogSource, on_bytes: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The decompressed bytes of a source in pieces; raises TruncatedGzip at a cut end."""
    handle = source.open()
    try:
        first = handle.read(_READ_BYTES)
        if on_bytes:
            on_bytes(len(first))
        if first.startswith(_GZIP_MAGIC):
            yield from _gunzip(first, handle, on_bytes)
            return
        chunk = first
        while chunk:
            yield chunk
            chunk = handle.read(_READ_BYTES)
            if on_bytes:
                on_bytes(len(chunk))
    finally:
        handle.close()


def _gunzip(first: bytes, handle, on_bytes) -> Iterator[bytes]:
    """Every member of a (multi-member) gzip stream; zero padding after the last is fine."""
    decompressor = zlib.decompressobj(wbits=31)
    data, in_member = first, False
    while True:
        if not data:
            data = handle.read(_READ_BYTES)
            if on_bytes:
                on_bytes(len(data))
            if not data:
                break
        if not in_member and not data.strip(b"\0"):
            data = b""
            continue
        in_member = True
        try:
            out = decompressor.decompress(data)
        except zlib.error as exc:
            raise TruncatedGzip(f"corrupt gzip data: {exc}") from None
        data = b""
        if out:
            yield out
        if decompressor.eof:
            data, in_member = decompressor.unused_data, False
            decompressor = zlib.decompressobj(wbits=31)
    if in_member:
        tail = decompressor.flush()
        if tail:
            yield tail
        raise TruncatedGzip("gzip stream ends before its end marker")


def blocks(source: LogSource, on_bytes: Callable[[int], None], on_cut: Callable[[str], None]) -> Iterator[tuple[bytes, int]]:
    """The source in line-aligned blocks `(data, end)`: each block is data[:end].

    A plain file is read one block per call and the next read starts again at
    the last line start, so no bytes are joined or sliced (copying 16 MB
    blocks twice, into fresh pages, was the reader's main serial cost).
    Compressed and archived logs stream through `line_blocks`.
    """
    if source.path is not None:
        with open(source.path, "rb") as handle:
            if handle.read(len(_GZIP_MAGIC)) != _GZIP_MAGIC:
                handle.seek(0)
                yield from _file_blocks(handle, on_bytes)
                return
    for block in line_blocks(read_chunks_until_cut(source, on_bytes, on_cut)):
        yield block, len(block)


def _file_blocks(handle, on_bytes: Callable[[int], None]) -> Iterator[tuple[bytes, int]]:
    block_bytes = BLOCK_BYTES  # read at call time, so tests can make blocks small
    offset = 0
    while data := handle.read(block_bytes):
        end = len(data)
        if end == block_bytes:
            end = data.rfind(b"\n") + 1
            if end == 0:  # a line longer than a block: read on to its end
                pieces = [data]
                while (more := handle.read(block_bytes)) and b"\n" not in more:
                    pieces.append(more)
                pieces.append(more)
                data = b"".join(pieces)
                end = len(data) if not more else data.rfind(b"\n") + 1
            handle.seek(offset + end)
        on_bytes(end)
        offset += end
        yield data, end


def line_blocks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Regroup byte chunks into blocks that end at a line boundary (the last may not)."""
    block_bytes = BLOCK_BYTES  # read at call time, so tests can make blocks small
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        pending.append(chunk)
        size += len(chunk)
        if size < block_bytes:
            continue
        data = b"".join(pending)
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending, size = [data], len(data)
            continue
        yield data[:cut]
        pending, size = [data[cut:]], len(data) - cut
    if size:
        yield b"".join(pending)


def is_json_log(head: bytes) -> bool:
    """Whether most non-blank lines of `head` are JSON objects (a text log's
    start with a timestamp). A majority, not the first line, decides: a junk
    first line, or a log cut mid-line, must not turn a JSON log into text."""
    lines = [line.lstrip() for line in head.split(b"\n") if line.strip()]
    return not lines or 2 * sum(line.startswith(b"{") for line in lines) >= len(lines)
