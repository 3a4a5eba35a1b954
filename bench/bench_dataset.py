"""Benchmark of `ftdc.to_dataset` against the one it replaces (issue 14 §1), side by side.

The fleet of the issue: the real 4.2, 7.0 and 8.0 samples in ../shared/samples/ftdc
plus every node under samples/ (demo and scenarios), 18 nodes. `before` is
`ftdc/dataset.py` as of GIT_REF (default: the commit before issue 14's dataset),
loaded from git into this process beside the current one, so both share the
decoder; rounds alternate. Prints each one's seconds, the dataset's size as a
multiple of the raw FTDC and the ratios (targets: size <= 1.5x, speed >= 3x).

    python -m bench.bench_dataset [--rounds 2] [--ref 0a410cc]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import ftdc

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "samples" / "ftdc"


def fleet() -> list[Path]:
    nodes = [p.parent for p in SHARED.rglob("metrics.*") if p.parent.name == "diagnostic.data"]
    nodes += [p for p in (ROOT / "samples").rglob("diagnostic.data") if p.is_dir()]
    return sorted(set(nodes))


def load_before(ref: str):
    source = subprocess.run(
        ["git", "show", f"{ref}:ftdc/dataset.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    spec = importlib.util.spec_from_loader("ftdc._dataset_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "ftdc"
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, "dataset_before.py", "exec"), module.__dict__)
    return module


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ref", default="0a410cc", help="git ref of the dataset writer to compare with")
    args = parser.parse_args()
    nodes = fleet()
    raw = sum(size(n) for n in nodes)
    writers = {"before": load_before(args.ref).to_dataset, "after": ftdc.to_dataset}
    times: dict[str, list[float]] = {k: [] for k in writers}
    sizes = {}
    warnings.simplefilter("ignore")
    for _ in range(args.rounds):
        for name, write in writers.items():
            out = Path(tempfile.mkdtemp(prefix=f"bench-dataset-{name}-")) / "d"
            began = time.perf_counter()
            write(nodes, out)
            times[name].append(time.perf_counter() - began)
            sizes[name] = size(out)
            shutil.rmtree(out.parent)
    print(f"{len(nodes)} nodes, {raw / 1e6:.1f} MB of FTDC, {args.rounds} round(s)")
    for name in writers:
        print(
            f"{name:7s} {statistics.median(times[name]):6.1f} s  dataset {sizes[name] / 1e6:6.1f} MB = {sizes[name] / raw:.2f}x the FTDC"
        )
    print(f"speed-up {statistics.median(times['before']) / statistics.median(times['after']):.1f}x")


if __name__ == "__main__":
    main()
