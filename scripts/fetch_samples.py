"""Fetch the real sample files the tests read, from their public origins, and check them.

    python3 scripts/fetch_samples.py            # into ../shared/samples beside the checkout
    python3 scripts/fetch_samples.py --check    # only check what is there (no network)
    python3 scripts/fetch_samples.py --dest DIR

scripts/samples.json lists every file: the repository, pinned commit and path it was
copied from, and its SHA-256. A file already there with the right digest is kept; any
other is downloaded from GitHub at that commit, checked, and moved into place whole, so
a failed or interrupted run never leaves a wrong file where the tests look. The
EXPECTED.json files (figures computed for these tests) have no public origin: the run
names them when missing. Exit status: 0 when every file is there and right, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "scripts" / "samples.json"
DEFAULT_DEST = ROOT.parent / "shared" / "samples"
# github.com resolves the abbreviated commits the sources were recorded with.
ORIGIN = "https://github.com/{repo}/raw/{commit}/{path}"
MAX_BYTES = 64 << 20  # the largest sample is 4 MB: anything past this is not the file
TIMEOUT_S = 60


def manifest(path: Path = MANIFEST) -> list[dict]:
    return json.loads(path.read_text())["files"]


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check(entry: dict, dest: Path) -> str | None:
    """Why the file under dest is not the one listed, or None when it is."""
    path = dest / entry["file"]
    if not path.is_file():
        return "missing"
    got = digest(path)
    return None if got == entry["sha256"] else f"SHA-256 {got}, expected {entry['sha256']}"


def fetch(entry: dict, dest: Path, origin: str = ORIGIN) -> None:
    """Download one file from its origin, check its digest, then move it into place."""
    url = origin.format(repo=entry["repo"], commit=entry["commit"], path=entry["path"])
    target = dest / entry["file"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            size = 0
            while block := response.read(1 << 20):
                size += len(block)
                if size > MAX_BYTES:
                    raise ValueError(f"{url}: more than {MAX_BYTES} bytes, not the sample")
                out.write(block)
        got = digest(Path(partial))
        if got != entry["sha256"]:
            raise ValueError(f"{url}: SHA-256 {got}, expected {entry['sha256']}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def run(dest: Path, only_check: bool, origin: str = ORIGIN, out=sys.stdout) -> int:
    failed = 0
    for entry in manifest():
        problem = check(entry, dest)
        if problem is None:
            continue
        if only_check or "repo" not in entry:
            why = problem if "repo" in entry else f"{problem}; it has no public origin (copy it from the shared samples)"
            print(f"{entry['file']}: {why}", file=out)
            failed += 1
            continue
        try:
            fetch(entry, dest, origin)
            print(f"{entry['file']}: fetched from {entry['repo']}@{entry['commit']}", file=out)
        except (OSError, ValueError) as e:
            print(f"{entry['file']}: {e}", file=out)
            failed += 1
    total = len(manifest())
    print(f"{total - failed} of {total} sample files in {dest} are right", file=out)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="where the tests read them (default: ../shared/samples)")
    parser.add_argument("--check", action="store_true", help="check the files there, download nothing")
    args = parser.parse_args()
    sys.exit(run(args.dest, args.check))


if __name__ == "__main__":
    main()
