"""Files this tool leaves while it works (unpacked bundles, `.partial` outputs), named with
the process id that made them, so a later run can remove those of a process that is gone
(killed with SIGKILL, a crash, a power cut) and never touch another's work in progress."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

# `<pid>-`: tempfile's random names never hold a dash, so only names made here match.
_PID = re.compile(r"(\d+)-")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def sweep(folder: str | os.PathLike, prefix: str, suffix: str = "") -> None:
    """Remove `<prefix><pid>-...<suffix>` entries of `folder` whose process is gone."""
    try:
        entries = list(os.scandir(Path(folder)))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(suffix)):
            continue
        pid = _PID.match(entry.name[len(prefix) :])
        if pid is None or int(pid.group(1)) == os.getpid() or alive(int(pid.group(1))):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            Path(entry.path).unlink(missing_ok=True)
