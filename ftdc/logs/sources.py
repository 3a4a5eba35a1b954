"""Find the log files behind the given paths and read them in line-aligned blocks.

Handles plain files, `.gz` (every member of a multi-member file, as Atlas
writes them), rotated sets (`mongod.log.<date>` before the live `mongod.log`),
directories, and `.tar`/`.tar.gz` archives holding several nodes' logs.
"""

import bz2
import datetime as dt
import lzma
import os
import re
import tarfile
import warnings
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from ..inputs import MAX_MEMBERS, special_kind, written_extent
from ..paths import SPARSE_FROM_BYTES
from ..timeutil import LogOffsets

BLOCK_BYTES = 16 << 20
_READ_BYTES = 1 << 20
# A line longer than this is skipped, as one problem row, instead of being held
# whole: customer files are untrusted, and one without a newline would otherwise
# be read into memory entire. Real lines are far shorter: mongod truncates each
# attribute at maxLogSizeKB (10 KB by default), so even a slow query with a huge
# command is tens of KB. 64 MiB leaves room for a raised maxLogSizeKB and bounds
# what a line can cost: the reader holds about one block and one such line.
# It is at least BLOCK_BYTES (else BLOCK_BYTES counts): only a line that fills a
# whole block can be this long, so only there is it looked for.
MAX_LINE_BYTES = 64 << 20
# The start of a skipped line, kept for its problem row (problems.SNIPPET_BYTES shows).
_HEAD_BYTES = 200
_GZIP_MAGIC = b"\x1f\x8b"
_ROTATED = re.compile(r"^(?P<stem>.*?\.log)(?:\.(?P<suffix>.+?))?(?:\.gz)?$")
# FTDC and other binary siblings that a directory of logs may hold.
_SKIP_DIRS = {"diagnostic.data"}
_PIPE = "a pipe (FIFO)"


class SourceError(FileNotFoundError):
    """A path that does not exist."""


class NotALog(ValueError):
    """Nothing in the input is a mongod log line (an FTDC file, random bytes, an empty file or archive)."""


class LogWarning(UserWarning):
    """Part of the input held no log line; the rest was read."""


class Readable(Protocol):
    """What a source opens to: a binary file, a decompressing stream or an archive member."""

    def read(self, size: int = -1, /) -> bytes: ...
    def close(self) -> None: ...


@dataclass
class LogSource:
    """One log file, possibly inside an archive or compressed."""

    name: str  # what `file` columns show: the path, or "archive.tar!member"
    group: str  # files of one node share a group: their directory or archive folder
    size: int  # bytes on disk (compressed size for .gz), for progress
    mtime: float
    open: Callable[[], Readable]  # positioned at the start
    path: Path | None = None  # a file of its own (not an archive member): it can be re-read by offset


@dataclass(frozen=True)
class LongLine:
    """A line longer than the limit, skipped: why, its first bytes, and whether a
    newline ended it (else it ran to the end of the input). It counts as one line."""

    reason: str
    head: bytes
    ended: bool


def _long_line(head: bytes, ended: bool, limit: int) -> LongLine:
    size = f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"
    return LongLine(f"line longer than {size}: skipped", head[:_HEAD_BYTES], ended)


class TruncatedGzip(Exception):
    """The gzip stream ended before its end marker; the data read so far is valid."""


def read_chunks_until_cut(source: LogSource, on_bytes, on_cut: Callable[[str], None]) -> Generator[bytes, None, None]:
    """read_chunks, ending quietly at a cut gzip stream after reporting it to `on_cut`.

    Everything decompressed before the cut still reaches the caller, so the lines
    before it are decoded and only the last, partial line is a problem.
    """
    try:
        yield from read_chunks(source, on_bytes)
    except TruncatedGzip as exc:
        on_cut(str(exc))


# A timestamp and its offset as mongod writes them: JSON lines' `{"$date":"...-03:00"}`, text lines' leading stamp.
_STAMP_OFFSET = re.compile(rb'(?:"\$date"\s*:\s*"|^)(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)\b', re.MULTILINE)
# How far back from a block's end its last stamped line is looked for before the whole block is searched.
_TAIL_BYTES = 65536


# The widest offset a clock is set to (UTC+14:00, UTC-12:00) with room to spare: beyond it a stamp is damaged.
_MAX_OFFSET = dt.timedelta(hours=18)


def _stamp(match: re.Match) -> tuple[dt.datetime, dt.timedelta] | None:
    """A stamp's UTC time and its offset; None for one no clock writes (a 30th of February, an offset of 99 hours)."""
    text = match[2].decode().replace(":", "")
    offset = dt.timedelta(0)
    if text != "Z":
        minutes = int(text[1:3]) * 60 + int(text[3:5])
        offset = dt.timedelta(minutes=-minutes if text[0] == "-" else minutes)
    try:
        local = dt.datetime.fromisoformat(match[1].decode()).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None
    return (local - offset, offset) if abs(offset) <= _MAX_OFFSET else None


class _Stamped(NamedTuple):
    """A line's readable stamp: where its match starts and ends in the block, its UTC time and offset."""

    start: int
    end: int
    utc: dt.datetime
    offset: dt.timedelta


def _readable(match: re.Match) -> _Stamped | None:
    stamp = _stamp(match)
    return None if stamp is None else _Stamped(match.start(), match.end(), *stamp)


def _next_stamp(block: bytes, lo: int, hi: int) -> _Stamped | None:
    """The first readable stamped line starting in block[lo:hi]."""
    for match in _STAMP_OFFSET.finditer(block, lo, hi):
        if (stamped := _readable(match)) is not None:
            return stamped
    return None


def _last_stamp(block: bytes, lo: int, hi: int) -> _Stamped | None:
    """The last readable stamped line starting in block[lo:hi]."""
    start = max(lo, hi - _TAIL_BYTES)
    while True:
        last = None
        for match in _STAMP_OFFSET.finditer(block, start, hi):
            last = _readable(match) or last
        if last is not None or start == lo:
            return last
        start = max(lo, start - 4 * _TAIL_BYTES)


def stamp_offsets(block: bytes, end: int | None = None) -> list[tuple[dt.datetime, dt.timedelta]]:
    """The offsets a block of log lines is written in, as (UTC time, offset) of its first and last stamped lines and,
    where their offsets differ, of the lines either side of each change (found by halving: a few searches a block).
    Damaged lines without a readable stamp are passed over; empty when no line has one (ctime stamps carry no offset).
    `end`: where the block's whole lines end."""
    end = len(block) if end is None else end
    first = _next_stamp(block, 0, end)
    if first is None:
        return []
    last = _last_stamp(block, first.start, end) or first
    points = {first.start: (first.utc, first.offset), last.start: (last.utc, last.offset)}
    if first.offset != last.offset:
        _changes_between(block, first, last, points)
    return [points[k] for k in sorted(points)]


def _changes_between(block: bytes, a: _Stamped, b: _Stamped, points: dict[int, tuple[dt.datetime, dt.timedelta]]) -> None:
    """Adds to `points` where the offset changes between stamped lines a and b (a before b, their offsets differ).
    A function of its own, not a closure: a recursive closure is a reference cycle, which held each 16 MB
    block until the next garbage collection (a 1 GB log peaked hundreds of MB higher)."""
    middle = _next_stamp(block, (a.end + b.start) // 2, b.start)
    if middle is None:  # nothing between the middle and b: the last line before b, if any
        middle = _last_stamp(block, a.end, b.start)
    if middle is None:  # a and b are neighbours: the change is between them
        points[a.start], points[b.start] = (a.utc, a.offset), (b.utc, b.offset)
        return
    for pair in ((a, middle), (middle, b)):
        if pair[0].offset != pair[1].offset:
            _changes_between(block, *pair, points)


def offsets(points: list[tuple[dt.datetime, dt.timedelta]]) -> LogOffsets | None:
    """The log's offsets over time from the (UTC time, offset) points of its blocks (`stamp_offsets`): spans of one
    offset in time order. A lone line in an offset none of its neighbours has (the cut tail of a line, a line pasted
    from elsewhere) is no span of its own where other spans hold several lines. None without any point."""
    spans: list[list] = []  # [first, last, offset, points]
    for at, offset in sorted(points, key=lambda p: p[0]):
        if spans and spans[-1][2] == offset:
            spans[-1][1], spans[-1][3] = at, spans[-1][3] + 1
        else:
            spans.append([at, at, offset, 1])
    if any(span[3] > 1 for span in spans):
        spans = [span for span in spans if span[3] > 1]
    merged: list[tuple[dt.datetime, dt.datetime, dt.timedelta]] = []
    for first, last, offset, _ in spans:  # spans a stray line had split are one again
        if merged and merged[-1][2] == offset:
            merged[-1] = (merged[-1][0], last, offset)
        else:
            merged.append((first, last, offset))
    return LogOffsets(tuple(merged)) if merged else None


def usual_offset(found: LogOffsets | None) -> dt.timedelta | None:
    """The offset most of the log's time is written in (the first span's where none is longer)."""
    if found is None:
        return None
    held: dict[dt.timedelta, dt.timedelta] = {}
    for first, last, offset in found.spans:
        held[offset] = held.get(offset, dt.timedelta(0)) + (last - first)
    return max(held, key=lambda o: (held[o], -[s[2] for s in found.spans].index(o)))


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
            files: list[Path] = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                files.extend(Path(root) / name for name in names if _looks_like_log(name))
            files = _regular(files)
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


def _regular(files: list[Path]) -> list[Path]:
    """The regular files among those a directory holds; a pipe or device there (which
    could block on open or never end) is skipped with a warning."""
    kept = []
    for file in files:
        kind = special_kind(file)
        if kind is None:
            kept.append(file)
        else:
            warnings.warn(f"{file}: {kind}, not a log file: skipped", LogWarning, stacklevel=4)
    return kept


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
    kind = special_kind(path)
    if kind == _PIPE:
        # A pipe named on purpose (`--log <(zcat mongod.log.gz)`) is read once, as a stream.
        # Opened without blocking, so a FIFO nobody writes to reads as empty instead of hanging.
        return [LogSource(str(path), str(path.parent), 0, stat.st_mtime, lambda: _open_stream(path))]
    if kind is not None:
        raise NotALog(f"{path}: {kind}, not a log file")
    if _is_tar(path):
        return _tar_sources(path)
    sparse = _mostly_holes(path, stat.st_size)
    if sparse:
        warnings.warn(sparse, LogWarning, stacklevel=4)
        return []
    return [LogSource(str(path), str(path.parent), stat.st_size, stat.st_mtime, lambda: open(path, "rb"), path)]


def _mostly_holes(path: Path, size: int) -> str | None:
    """Why `path` is not read: after the hole a copytruncate leaves at its start (skipped,
    see `_after_padding`), mostly holes, bytes never written, which read as NULs (a log is
    written front to back, so that is not one mongod wrote), else None. As the FTDC reader
    refuses such files, up front and without reading them."""
    first, written = written_extent(path)
    span = size - first
    if span > SPARSE_FROM_BYTES and written < span // 2:
        return (
            f"{path}: a sparse file, {written / 2**20:,.0f} MB of its {span / 2**20:,.0f} MB (from the first byte written) "
            "ever written: not a log as mongod writes it; not read"
        )
    return None


# Where tar puts its magic in a member header, and the magic ("ustar\0" POSIX, "ustar " GNU).
_TAR_MAGIC_AT = 257
_TAR_MAGIC = b"ustar"


# The compressions tarfile opens ("r:*"), by their own signatures.
class _Decompressor(Protocol):
    def decompress(self, data: bytes, max_length: int = -1, /) -> bytes: ...


_COMPRESSED: dict[bytes, Callable[[], _Decompressor]] = {
    _GZIP_MAGIC: lambda: zlib.decompressobj(wbits=31),
    b"BZh": bz2.BZ2Decompressor,
    b"\xfd7zXZ\x00": lzma.LZMADecompressor,
}


def plain_bytes(paths: Sequence[Path]) -> int | None:
    """The bytes `paths` hold when each is a regular file of plain text (neither compressed nor an archive): what the
    reader's blocks will carry. None for anything else (a folder, an archive, a compressed log, a file that cannot be
    opened), whose size on disk says little of that."""
    total = 0
    for path in paths:
        try:
            if not path.is_file() or _is_tar(path):
                return None
            with open(path, "rb") as handle:
                head = handle.read(8)
            total += path.stat().st_size
        except (OSError, NotALog):
            return None
        if any(head.startswith(magic) for magic in _COMPRESSED):
            return None
    return total


def _is_tar(path: Path) -> bool:
    """Whether `path` is a tar archive (compressed or not), by tar's own signature in its
    first header: `tarfile.is_tarfile` takes a block of NULs for an empty archive, and so
    a log that copytruncate left NUL-padded for one. One named as an archive whose
    compression cannot even be opened is one clear error."""
    with open(path, "rb") as handle:
        head = handle.read(64 << 10)
    named = path.name.lower().endswith((".tar", ".tgz", ".tar.gz"))
    magic = next((m for m in _COMPRESSED if head.startswith(m)), None)
    if magic is not None:
        try:
            head = _COMPRESSED[magic]().decompress(head, 2 * _TAR_MAGIC_AT)
        except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
            if named:
                raise NotALog(f"{path}: not a readable archive ({exc or type(exc).__name__})") from None
            return False
        if named and len(head) < _TAR_MAGIC_AT + len(_TAR_MAGIC):
            raise NotALog(f"{path}: not a readable archive (it ends before its first member's header)")
    return head[_TAR_MAGIC_AT : _TAR_MAGIC_AT + len(_TAR_MAGIC)] == _TAR_MAGIC


def _tar_sources(path: Path) -> list[LogSource]:
    """The archive's log members in archive order, all read through one open archive:
    a compressed archive is inflated once from start to end, not once per member.
    Members are counted as they are listed and stop at MAX_MEMBERS; a cut or corrupt
    archive keeps the members listed before the damage, with a warning."""
    archive = _SharedArchive(path)
    members = []
    try:
        for count, member in enumerate(archive.tar, 1):
            if count > MAX_MEMBERS:
                archive.close()
                raise NotALog(
                    f"{path}: more than {MAX_MEMBERS:,} members, more than a support bundle holds; unpack it yourself and point at a directory"
                )
            if member.isfile() and _looks_like_log(Path(member.name).name):
                members.append(member)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        warnings.warn(
            f"{path}: archive damaged after {len(members)} log member(s) ({exc or type(exc).__name__}): the rest is not read",
            LogWarning,
            stacklevel=4,
        )
    archive.expect(len(members))
    return [
        LogSource(f"{path}!{m.name}", f"{path}!{os.path.dirname(m.name)}", m.size, float(m.mtime), _member_opener(archive, m))
        for m in members
    ]


def _member_opener(archive: "_SharedArchive", member: tarfile.TarInfo):
    return lambda: _Member(archive, member)


class _SharedArchive:
    """One open tar file for all of its members' sources, closed when the last is read."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.tar = tarfile.open(path, "r:*")
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise NotALog(f"{path}: not a readable archive ({exc or type(exc).__name__})") from None
        self.left = 0

    def expect(self, members: int) -> None:
        self.left = members
        if not members:
            self.close()

    def done(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.close()

    def close(self) -> None:
        self.tar.close()


class _Member:
    """A tar member's file object; damage in the archive reads as an OSError (a problem
    row naming the member), and closing the last member closes the archive."""

    def __init__(self, archive: _SharedArchive, member: tarfile.TarInfo):
        self._archive = archive
        try:
            handle = archive.tar.extractfile(member)
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            archive.done()
            raise OSError(f"archive damaged ({exc or type(exc).__name__})") from None
        if handle is None:  # not a regular file (the members read are; a damaged header can say otherwise)
            archive.done()
            raise OSError("archive damaged (the member is not a regular file)")
        self._handle = handle

    def read(self, size: int = -1) -> bytes:
        try:
            return self._handle.read(size)
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            raise OSError(f"archive damaged ({exc or type(exc).__name__})") from None

    def close(self) -> None:
        self._handle.close()
        self._archive.done()


def _open_stream(path: Path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    return open(fd, "rb")


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
        chunk, padding = first, True
        while chunk:
            if padding:  # the NULs a copytruncate leaves before the first line
                chunk = chunk.lstrip(b"\0")
                padding = not chunk
            if chunk:
                yield chunk
            chunk = handle.read(_READ_BYTES)
            if on_bytes:
                on_bytes(len(chunk))
    finally:
        handle.close()


def _gunzip(first: bytes, handle, on_bytes) -> Iterator[bytes]:
    """Every member of a (multi-member) gzip stream; zero padding after the last is fine.

    Each piece is at most _READ_BYTES whatever the compression ratio: a zlib bomb
    (a gigabyte of one byte inflates from a megabyte) is inflated step by step,
    the input a step leaves (`unconsumed_tail`) fed again before more is read.
    """
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
            out = decompressor.decompress(data, _READ_BYTES)
        except zlib.error as exc:
            raise TruncatedGzip(f"corrupt gzip data: {exc}") from None
        if out:
            yield out
        if decompressor.eof:
            # At the end of a member the rest of the input is unused_data (which
            # unconsumed_tail may repeat): the next member, or padding.
            data, in_member = decompressor.unused_data, False
            decompressor = zlib.decompressobj(wbits=31)
        else:
            data = decompressor.unconsumed_tail
    if in_member:
        # No input is left (unconsumed_tail was fed until empty), so what
        # flush returns is bounded by the last, unfinished match.
        tail = decompressor.flush()
        if tail:
            yield tail
        raise TruncatedGzip("gzip stream ends before its end marker")


def blocks(
    source: LogSource, on_bytes: Callable[[int], None], on_cut: Callable[[str], None]
) -> Iterator[tuple[bytes, int] | LongLine]:
    """The source in line-aligned blocks `(data, end)`: each block is data[:end];
    a line longer than MAX_LINE_BYTES comes as a LongLine instead, in its place.

    A plain file is read one block per call and the next read starts again at
    the last line start, so no bytes are joined or sliced (copying 16 MB
    blocks twice, into fresh pages, was the reader's main serial cost).
    Compressed and archived logs stream through `line_blocks`.
    """
    if source.path is not None:
        with open(source.path, "rb") as handle:
            if handle.read(len(_GZIP_MAGIC)) != _GZIP_MAGIC:
                start = _after_padding(handle, source.path)
                on_bytes(start)
                yield from _file_blocks(handle, on_bytes, start)
                return
    yield from line_blocks(read_chunks_until_cut(source, on_bytes, on_cut))


def _after_padding(handle, path: Path) -> int:
    """The offset of the first byte that is not NUL padding: a log that logrotate's
    copytruncate emptied while mongod kept writing at its old offset starts with NULs
    (a hole the file system skips for us, or zeros written by a copy of it), which hold
    no newline, so line 1 is still the first line mongod wrote."""
    offset, _ = written_extent(path)
    handle.seek(offset)
    while piece := handle.read(_READ_BYTES):
        kept = piece.lstrip(b"\0")
        offset += len(piece) - len(kept)
        if kept:
            break
    return offset


def _file_blocks(handle, on_bytes: Callable[[int], None], offset: int) -> Iterator[tuple[bytes, int] | LongLine]:
    block_bytes = BLOCK_BYTES  # read at call time, so tests can make blocks small
    handle.seek(offset)
    while data := handle.read(block_bytes):
        end = len(data)
        if end == block_bytes:
            end = data.rfind(b"\n") + 1
            if end == 0:  # a line longer than a block
                item, end = _file_long_line(handle, offset, data, block_bytes)
                on_bytes(end)
                offset += end
                handle.seek(offset)
                yield item
                continue
            handle.seek(offset + end)
        on_bytes(end)
        offset += end
        yield data, end


def _file_long_line(handle, offset: int, first: bytes, block_bytes: int) -> tuple[tuple[bytes, int] | LongLine, int]:
    """The line at `offset`, which fills `first` (a whole block) and goes on, and its
    bytes with the newline: as a block of its own when it is within the limit, else
    a LongLine. It is scanned a block at a time, so memory stays about one block
    however long it is; one within the limit is then read again, whole."""
    limit = max(MAX_LINE_BYTES, block_bytes)
    length, newline = len(first), -1
    while newline < 0 and (more := handle.read(block_bytes)):
        newline = more.find(b"\n")
        length += len(more) if newline < 0 else newline + 1
    if length - (newline >= 0) > limit:
        return _long_line(first, newline >= 0, limit), length
    handle.seek(offset)
    return (handle.read(length), length), length


def line_blocks(chunks: Iterator[bytes]) -> Iterator[tuple[bytes, int] | LongLine]:
    """Regroup byte chunks into blocks `(data, end)` of whole lines, data[:end] (the last
    may not end at a newline), and a LongLine for each line longer than MAX_LINE_BYTES,
    dropped as it streams past: memory stays about a block and a line."""
    block_bytes = BLOCK_BYTES  # read at call time, so tests can make blocks small
    limit = max(MAX_LINE_BYTES, block_bytes)
    pending: list[bytes] = []
    size = 0  # bytes in pending
    cut = 0  # bytes in pending up to its last newline: 0 while it holds part of one line
    skipped: bytes | None = None  # the head of a long line being dropped, until its newline
    for chunk in chunks:
        if skipped is not None:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            yield _long_line(skipped, True, limit)
            skipped, chunk = None, chunk[newline + 1 :]
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            cut = size + newline + 1
        pending.append(chunk)
        size += len(chunk)
        if size < block_bytes:
            continue
        if cut:
            data = b"".join(pending)
            rest = data[cut:]
            yield data, cut
            del data  # the consumer holds the block as long as it needs it
            pending, size, cut = [rest], len(rest), 0
        elif size > limit:
            skipped = pending[0][:_HEAD_BYTES]
            pending, size = [], 0
    if skipped is not None:
        yield _long_line(skipped, False, limit)
    elif size:
        yield b"".join(pending), size


def is_json_log(head: bytes) -> bool:
    """Whether most non-blank lines of `head` are JSON objects (a text log's
    start with a timestamp). A majority, not the first line, decides: a junk
    first line, or a log cut mid-line, must not turn a JSON log into text."""
    lines = [line.lstrip() for line in head.split(b"\n") if line.strip()]
    return not lines or 2 * sum(line.startswith(b"{") for line in lines) >= len(lines)
