"""What users point the tool at, and what it holds: FTDC directories and log files.

A `diagnostic.data` directory, a dbpath (the directory holding one), one FTDC
file, or a `.tar`/`.tar.gz`/`.tgz`/`.zip` support bundle holding one or several
nodes' directories and their logs. Archives arrive in support tickets and are
untrusted: only FTDC and log members are extracted, never outside a private
temporary directory (no absolute paths, `..` or links), streamed with caps on
member count and on bytes written checked as they go, once per archive per
process, removed at exit.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .errors import FTDCError, FTDCWarning
from .leftovers import sweep

FTDC_PREFIX = "metrics."
MAX_MEMBERS = 100_000
MAX_BYTES = 64 << 30  # a bundle of several nodes' FTDC (<= 500 MB each) and days of logs
# FTDC files are compressed already and mongod's logs shrink 5-20x in gzip: an archive
# that unpacks to more than this many times its size is a decompression bomb.
MAX_RATIO = 100
MIN_BUDGET = 64 << 20
_ZIP_TAIL = 22 + 0xFFFF  # the end record and the longest comment
_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")
_LOG_HINTS = (".log",)
_unpacked: dict[tuple, Path] = {}
_shown_as: dict[str, str] = {}  # unpacked folder -> "archive!"
UNPACKED_PREFIX = "ftdc-analyze-"


@dataclass
class Inputs:
    """FTDC directories (or single files) and log files found behind the paths a user gave."""

    ftdc: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def nodes(self, paths: Sequence[str | os.PathLike]) -> list[Path]:
        """The FTDC found; none is the one error every command gives, naming the paths (and the command for
        logs when logs were all there was)."""
        if not self.ftdc:
            raise FTDCError(
                f"{', '.join(map(str, paths))}: no FTDC (diagnostic.data) in it"
                + ("; these are mongod logs: use `ftdc-analyze logs`" if self.logs else "")
            )
        return self.ftdc


_SPECIAL = (
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(path: str | os.PathLike) -> str | None:
    """What a path is when it is neither a regular file nor a directory ("a pipe (FIFO)",
    "a character device", ...), else None. Such a file can block forever on open or
    never end (/dev/zero), so readers that need a file refuse it up front."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing or unreadable: the caller's own check says which
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def written_extent(path: str | os.PathLike) -> tuple[int, int]:
    """`(first, written)`: the offset of the first byte of `path` ever written, and the bytes
    written from there to its end, as the file system tells them (SEEK_DATA, SEEK_HOLE)
    without reading the file. A sparse file's holes read as NULs; a log that logrotate's
    copytruncate emptied while mongod kept writing at its old offset starts with one.
    Where the file system cannot tell, every byte counts as written."""
    with open(path, "rb") as handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        try:
            first = os.lseek(fd, 0, os.SEEK_DATA)
        except OSError as e:
            return (size, 0) if e.errno == errno.ENXIO else (0, size)  # ENXIO: holes to the end
        written, at = 0, first
        while at < size:
            hole = os.lseek(fd, at, os.SEEK_HOLE)
            written += hole - at
            try:
                at = os.lseek(fd, hole, os.SEEK_DATA)
            except OSError:
                break  # holes to the end
        return first, written


def refuse_special(path: str | os.PathLike) -> None:
    kind = special_kind(path)
    if kind is not None:
        raise FTDCError(f"{path}: {kind}, not a file: FTDC is read from files and directories (copy it to a file first)")


def is_archive(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name.endswith(_ARCHIVES)


def is_ftdc_name(name: str) -> bool:
    return name.startswith(FTDC_PREFIX)


def is_log_name(name: str) -> bool:
    name = name.lower()
    return not is_ftdc_name(name) and (
        any(h in name for h in _LOG_HINTS) or name.endswith(".gz") and not name.endswith(_ARCHIVES)
    )


def looks_like_log(path: Path) -> bool:
    """A mongod log rather than FTDC: JSON lines (4.4+) or a timestamped text line (older)."""
    if not path.is_file():
        return False
    with open(path, "rb") as f:
        head = f.read(64)
    if head.startswith(b"\x1f\x8b"):  # gzip: logs are compressed, FTDC never is
        return True
    return head.startswith(b'{"t":') or (len(head) > 20 and head[:4].isdigit() and head[4:5] == b"-" and b"T" in head[:11])


def _safe_name(name: str) -> PurePosixPath | None:
    """The member's path inside the archive, or None for absolute paths and `..`."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return path


def _wanted(name: PurePosixPath) -> bool:
    return is_ftdc_name(name.name) or is_log_name(name.name)


class _Budget:
    """Bytes an archive may unpack to, counted as they are written: at most MAX_RATIO times
    its own size (MIN_BUDGET for small ones), MAX_BYTES, and what the temporary directory
    has free. A member's declared size is not trusted, so the count is of bytes written."""

    def __init__(self, archive: Path):
        self.archive = archive
        self.limit = min(MAX_BYTES, max(MIN_BUDGET, MAX_RATIO * archive.stat().st_size))
        self.free = shutil.disk_usage(tempfile.gettempdir()).free
        self.used = 0

    def take(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise FTDCError(
                f"{self.archive}: unpacks to more than {_size(self.limit)} ({MAX_RATIO}x its size, at most {_size(MAX_BYTES)}), "
                "more than a support bundle holds; unpack it yourself"
            )
        if self.used > self.free:
            raise FTDCError(f"{self.archive}: unpacking needs more than the {_size(self.free)} free in {tempfile.gettempdir()}")


def _size(size: int) -> str:
    return f"{size / 2**30:,.1f} GB" if size >= 2**30 else f"{size / 2**20:,.0f} MB"


def _count(archive: Path, members: int) -> None:
    if members > MAX_MEMBERS:
        raise FTDCError(
            f"{archive}: more than {MAX_MEMBERS:,} members, more than a support bundle holds; unpack it yourself and point at a directory"
        )


def _copy(source, out: Path, budget: _Budget) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as dst:
        while piece := source.read(1 << 20):
            budget.take(len(piece))
            dst.write(piece)


def _extract_tar(archive: Path, target: Path) -> None:
    """Streamed: members are counted, and bytes written, as they come; only regular files
    with a safe name are written (never links or devices), so nothing lands outside `target`."""
    budget = _Budget(archive)
    with tarfile.open(archive, "r|*") as tar:
        for count, member in enumerate(tar, 1):
            _count(archive, count)
            name = _safe_name(member.name)
            if member.isfile() and name is not None and _wanted(name):
                _copy(tar.extractfile(member), target.joinpath(*name.parts), budget)


def _zip_entries(archive: Path) -> int | None:
    """The entry count the end of a zip declares (zip64 too), read before zipfile lists
    them all in memory; None when there is no end record (zipfile then says so)."""
    with open(archive, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - _ZIP_TAIL))
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + 22 > len(tail):
            return None
        (entries,) = struct.unpack_from("<H", tail, at + 10)
        locator = tail.rfind(b"PK\x06\x07", 0, at)
        if entries == 0xFFFF and locator >= 0 and locator + 16 <= len(tail):
            f.seek(struct.unpack_from("<Q", tail, locator + 8)[0])
            record = f.read(40)
            if len(record) == 40 and record.startswith(b"PK\x06\x06"):
                (entries,) = struct.unpack_from("<Q", record, 32)
        return entries


def _extract_zip(archive: Path, target: Path) -> None:
    _count(archive, _zip_entries(archive) or 0)
    budget = _Budget(archive)
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        _count(archive, len(infos))
        for info in infos:
            name = _safe_name(info.filename)
            if info.is_dir() or name is None or not _wanted(name) or stat.S_ISLNK(info.external_attr >> 16):
                continue
            with zf.open(info) as src:
                _copy(src, target.joinpath(*name.parts), budget)


def unpack(archive: Path) -> Path:
    """The archive's FTDC and log files in a private directory (unpacked once per process)."""
    st = archive.stat()
    key = (os.path.realpath(archive), st.st_size, st.st_mtime_ns)
    if key in _unpacked:
        return _unpacked[key]
    sweep(tempfile.gettempdir(), UNPACKED_PREFIX)
    target = Path(tempfile.mkdtemp(prefix=f"{UNPACKED_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, target, True)
    try:
        if archive.name.lower().endswith(".zip"):
            _extract_zip(archive, target)
        else:
            _extract_tar(archive, target)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise FTDCError(f"{archive}: not a readable archive: {exc}") from None
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    _unpacked[key] = target
    _shown_as[str(target)] = f"{archive}!"
    return target


def as_shown(text: str) -> str:
    """`text` with the temporary folders of unpacked archives named as the user knows them:
    `bundle.tar.gz!node/diagnostic.data/...`, not `/tmp/ftdc-analyze-123-x/node/...`."""
    for target, shown in _shown_as.items():
        text = text.replace(target + os.sep, shown).replace(target, shown)
    return text


def _scan(root: Path) -> Inputs:
    """Every directory holding FTDC files, and every log file, below `root`."""
    found = Inputs()
    for folder, dirs, files in os.walk(root, onerror=_unreadable(root)):
        dirs.sort()
        here = Path(folder)
        if any(is_ftdc_name(f) for f in files):
            found.ftdc.append(here)
        found.logs += [here / f for f in sorted(files) if is_log_name(f) and special_kind(here / f) is None]
    return found


def _unreadable(root: Path):
    """os.walk's error handler: the folder given cannot be read is an error (not "no FTDC
    in it"); one below it is a warning, and the rest is still searched."""

    def handle(exc: OSError) -> None:
        if os.fspath(exc.filename) == os.fspath(root):
            raise exc
        warnings.warn(f"{exc.filename}: {(exc.strerror or str(exc)).lower()}: not searched", FTDCWarning, stacklevel=2)

    return handle


def discover(path: str | os.PathLike) -> Inputs:
    """The FTDC directories and logs a path holds."""
    path = Path(path)
    if not path.exists():
        raise FTDCError(f"{path}: no such file or directory")
    refuse_special(path)
    if is_archive(path):
        return _scan(unpack(path))
    if path.is_dir():
        direct = [p for p in path.iterdir() if p.is_file() and is_ftdc_name(p.name)]
        if direct:
            return Inputs([path], [])
        return _scan(path)
    return Inputs([], [path]) if looks_like_log(path) else Inputs([path], [])


def gather(paths) -> Inputs:
    """What several paths hold together (each as `discover` finds it), each place once: a folder given twice, or
    under two names, is one node, and so is a node's folder given with one of its files (the folder holds it)."""
    found = Inputs()
    for path in paths:
        more = discover(path)
        found.ftdc += more.ftdc
        found.logs += more.logs
    folders = {p.resolve() for p in found.ftdc if p.is_dir()}
    found.ftdc = _once([p for p in found.ftdc if p.is_dir() or p.resolve().parent not in folders])
    found.logs = _once(found.logs)
    return found


def _once(paths: list[Path]) -> list[Path]:
    """`paths` without a second name of a place already listed, in order."""
    seen: dict[Path, Path] = {}
    for path in paths:
        seen.setdefault(path.resolve(), path)
    return list(seen.values())


def _shown(path: Path) -> str:
    return as_shown(str(path))


def what_was_found(paths, found: Inputs) -> list[str]:
    """What a user should know of what their paths held before it is read: the nodes found below a folder that is no
    node's own (and how to name one), and a metrics file read without the other files of its node's diagnostic.data."""
    notes = []
    for given in map(Path, paths):
        if not given.is_dir() or any(is_ftdc_name(p.name) for p in given.iterdir() if p.is_file()):
            continue
        root = given.resolve()
        below = [d for d in found.ftdc if d.is_dir() and d.resolve().is_relative_to(root)]
        if not below or [d.resolve() for d in below] == [root / "diagnostic.data"]:
            continue  # a node's own folder (a dbpath) names that node
        listed = ", ".join(_shown(d) for d in below[:5]) + (f" and {len(below) - 5} more" if len(below) > 5 else "")
        count = "1 node" if len(below) == 1 else f"{len(below)} nodes"
        notes.append(
            f"{count} under {_shown(given)}: {listed}; "
            + (
                "reading it"
                if len(below) == 1
                else f"read all {len(below)} (name one folder, e.g. {_shown(below[0])}, to read one)"
            )
        )
    for file in (f for f in found.ftdc if f.is_file() and f.parent.name == "diagnostic.data"):
        others = sorted(p.name for p in file.parent.iterdir() if p != file and p.is_file() and is_ftdc_name(p.name))
        if others:
            named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            other = "the other FTDC file" if len(others) == 1 else f"the {len(others)} other FTDC files"
            notes.append(
                f"read {_shown(file)} alone: {other} of its folder ({named}) not read; "
                f"give the folder {_shown(file.parent)} to read them all"
            )
    return notes


def logs_beside(ftdc_dirs: list[Path]) -> list[Path]:
    """Log files in the folder holding each `diagnostic.data` (or the `diagnostic.data` of a metrics file given
    alone), as a support bundle or the demo lays them out (`node/diagnostic.data`, `node/mongod.log`): regular
    files only."""
    found: list[Path] = []
    for directory in ftdc_dirs:
        if directory.is_file():  # one metrics file of a node's folder: its log is beside that folder
            directory = directory.parent
        if directory.name != "diagnostic.data":
            continue
        folder = directory.parent
        found += [f for f in sorted(folder.iterdir()) if is_log_name(f.name) and f.is_file() and f not in found]
    return found


@dataclass(frozen=True)
class LogPlan:
    """Which logs an analysis of these inputs reads, by the one policy every command follows (`plan_logs`)."""

    given: list[Path]
    """Logs the user named (`--log`, log files among the paths), with those inside the inputs: read strictly, one that
    cannot be read is an error."""
    found: list[Path]
    """Logs nobody named, inside the inputs (a bundle, a folder) or else beside each diagnostic.data: read where they
    can be, otherwise a warning names them (an empty `mongod.log`, as a fresh rotation leaves, must not end an analysis
    nobody asked a log of)."""
    beside: bool = False
    """`found` lay beside the FTDC, not inside the inputs: a user is told which were read, and how to name another."""

    @property
    def paths(self) -> list[Path]:
        return self.given or self.found


def plan_logs(
    paths: Sequence[str | os.PathLike], found: Inputs, given: Sequence[str | os.PathLike] = (), no_log: bool = False
) -> LogPlan:
    """The logs to read with the FTDC `found` behind `paths`: those `given` (`--log`) and the log files among the
    paths themselves (and any inside the inputs); else those inside the inputs; else those beside each
    diagnostic.data; none under `no_log`, which cannot go with logs given."""
    named = [Path(p) for p in given] + [p for p in map(Path, paths) if p in found.logs]
    if named and no_log:
        raise ValueError("--no-log, yet logs were given (--log, or log files among the paths)")
    if named:
        return LogPlan(list(dict.fromkeys([*found.logs, *named])), [])
    if no_log:
        return LogPlan([], [])
    if found.logs:
        return LogPlan([], list(found.logs))
    beside = logs_beside(found.ftdc)
    return LogPlan([], beside, beside=bool(beside))


def one_node(path: str | os.PathLike) -> Path:
    """The one FTDC directory or file behind `path` (for readers of a single node)."""
    found = discover(path)
    if not found.ftdc:
        if found.logs and Path(path).is_file():
            raise FTDCError(f"{path}: this is a mongod log, not FTDC (use `ftdc-analyze logs` for logs)")
        raise FTDCError(f"{path}: no FTDC files (metrics.*) in it")
    if len(found.ftdc) > 1:
        listed = ", ".join(str(p) for p in found.ftdc[:5]) + (" ..." if len(found.ftdc) > 5 else "")
        raise FTDCError(
            f"{path}: holds {len(found.ftdc)} nodes' FTDC ({listed}); name one, or give them all to `ftdc-analyze` to analyse several nodes"
        )
    return found.ftdc[0]
