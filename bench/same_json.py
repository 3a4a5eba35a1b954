"""The `--json` document of every committed scenario and real sample, this checkout against an older one: what a
change that must not alter the answers altered, case by case (`--redact` too).

    git archive <commit> | tar -x -C /tmp/old    # plus this checkout's ftdc/_native.abi3.so in /tmp/old/ftdc/
    python -m bench.same_json --old /tmp/old [--out /tmp/same-json [--reuse-old]] [--only WORD ...]

Each case runs `cli.py PATHS --json` (and `--json --redact`) in a fresh process of each checkout; the document's
`generated` time is the only field left out. `--reuse-old` takes the older checkout's documents from an earlier
run's `--out` where it wrote them. Prints each case's verdict and a unified diff of those that differ;
exits 1 when any does.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "samples" / "scenarios"
REAL = (ROOT.parent / "shared" / "samples" / "ftdc").resolve()


def cases() -> dict[str, list[Path]]:
    """Case name -> the paths the command is given: the demo, each scenario (a replica set's members together), each
    real FTDC sample."""
    found = {"demo": [ROOT / "samples" / "diagnostic.data"]}
    for scenario in sorted(p for p in SCENARIOS.iterdir() if p.is_dir()):
        members = sorted(scenario.glob("*/diagnostic.data"))
        found[scenario.name] = members or [scenario / "diagnostic.data"]
    if REAL.is_dir():
        for capture in sorted(p for p in REAL.iterdir() if p.is_dir()):
            given = capture / "diagnostic.data"
            found[f"real/{capture.name}"] = [given] if given.is_dir() else sorted(capture.iterdir())
    return found


def document(checkout: Path, paths: list[Path], redact: bool) -> str:
    """The command's JSON document as `checkout` writes it, without its time of writing, indented for a diff."""
    command = [sys.executable, "cli.py", *map(str, paths), "--json", *(["--redact"] if redact else [])]
    done = subprocess.run(
        command, cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip()[-2000:]}\n"
    parsed = json.loads(done.stdout)
    parsed.pop("generated", None)
    return json.dumps(parsed, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the older checkout (its native module built)")
    parser.add_argument("--out", type=Path, help="also write each case's two documents here")
    parser.add_argument("--reuse-old", action="store_true", help="the older checkout's documents from --out, where there")
    parser.add_argument("--only", nargs="*", default=[], help="the cases whose names contain one of these words")
    args = parser.parse_args()
    differ = 0
    for name, paths in cases().items():
        if args.only and not any(word in name for word in args.only):
            continue
        for redact in (False, True):
            label = name + (" --redact" if redact else "")
            places = (
                {side: args.out / side / (label.replace("/", "_").replace(" --", ".") + ".json") for side in ("old", "new")}
                if args.out
                else {}
            )
            kept = args.reuse_old and "old" in places and places["old"].is_file()
            old = places["old"].read_text() if kept else document(args.old, paths, redact)
            new = document(ROOT, paths, redact)
            for side, text in (("old", old), ("new", new)) if places else ():
                places[side].parent.mkdir(parents=True, exist_ok=True)
                places[side].write_text(text)
            if old == new:
                print(f"same     {label}", flush=True)
                continue
            differ += 1
            print(f"DIFFERS  {label}", flush=True)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "old", "new", n=2))
    print(f"{differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
