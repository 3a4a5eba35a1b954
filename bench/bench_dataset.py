"""Benchmarks of `ftdc.to_dataset`, side by side: against the writer it replaced (issue 14 §1),
and (--days) against reading every metric of one node (issue 38).

The fleet of the issue: the real 4.2, 7.0 and 8.0 samples in ../shared/samples/ftdc
plus every node under samples/ (demo and scenarios), 18 nodes. `before` is
`ftdc/dataset.py` as of GIT_REF (default: the commit before issue 14's dataset),
loaded from git into this process beside the current one, so both share the
decoder; rounds alternate. Prints each one's seconds, the dataset's size as a
multiple of the raw FTDC and the ratios (targets: size <= 1.5x, speed >= 3x).

    python -m bench.bench_dataset [--rounds 2] [--ref 0a410cc]

With --days, the node of `bench.bench_analyze` (the 7.0 layout's 2,323 metrics, a sample a second,
built once under bench/data/analyze-<days>d/) for each length given: `export --dataset` against
`read_ftdc` of every metric, alternating in each round, both in this process (`to_dataset` /
`read_ftdc`, after one warm-up of each, and each after the memory the decoder kept is given back
(`release_free_memory`): as a fresh process finds it, where a read right after another reuses its pages and took
1.3 s against 4 - 5 s on a week) and as whole processes (`cli.py export DIR --dataset OUT` /
`python -c "ftdc.read_ftdc(DIR)"`); the median of each round's ratio of clock time, and of CPU
time (every thread, children included: what a loaded machine's clock follows), with the load
average around each round (target: <= 2x).

    python -m bench.bench_dataset --days 1 7 [--rounds 5] [--before REF]

(--before REF: also `to_dataset` as of that git ref, loaded beside the current one, in this process.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import ftdc
from ftdc.memory import release_free_memory

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


def timed(action) -> tuple[float, float]:
    """Seconds of `action` on the clock, and of CPU in this process and its children (every thread)."""

    def cpu() -> float:
        mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime

    began, used = time.perf_counter(), cpu()
    action()
    return time.perf_counter() - began, cpu() - used


def run(command: list[str]) -> None:
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def against_reading(days: float, rounds: int, before: str | None = None) -> dict:
    """Export --dataset over read_ftdc of every metric, in this process and as whole processes (see the docstring)."""
    from bench.bench_analyze import build_ftdc

    base = ROOT / "bench" / "data" / f"analyze-{days:g}d"
    base.mkdir(parents=True, exist_ok=True)
    directory = build_ftdc(base / "diagnostic.data", days)
    scratch = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    out = scratch / "d"

    def export() -> None:
        ftdc.to_dataset([directory], out)

    def export_process() -> None:
        run([sys.executable, "cli.py", "export", str(directory), "--dataset", str(out)])

    read_process = [sys.executable, "-c", "import sys, ftdc; ftdc.read_ftdc(sys.argv[1])", str(directory)]
    cases = {
        "in_process": (lambda: ftdc.read_ftdc(directory), export),
        "whole_process": (lambda: run(read_process), export_process),
    }
    if before:
        earlier = load_before(before).to_dataset
        cases["in_process_before"] = (lambda: ftdc.read_ftdc(directory), lambda: earlier([directory], out))
    figures: dict = {"ftdc_mb": round(size(directory) / 1e6, 1)}
    timings: dict[str, dict[str, list]] = {
        name: {k: [] for k in ("read", "export", "read_cpu", "export_cpu", "load", "dataset_mb")} for name in cases
    }
    try:
        for read, write in cases.values():
            read(), write(), shutil.rmtree(out)  # imports, the page cache, the allocator's first maps
        for _ in range(rounds):  # every case in each round, so each round's load weighs on all alike
            for name, (read, write) in cases.items():
                load, got = os.getloadavg()[0], timings[name]
                for action, key in ((read, "read"), (write, "export")):
                    release_free_memory()
                    seconds, used = timed(action)
                    got[key].append(seconds)
                    got[f"{key}_cpu"].append(used)
                got["dataset_mb"].append(round(size(out) / 1e6, 1))
                shutil.rmtree(out)
                got["load"].append(round((load + os.getloadavg()[0]) / 2, 1))
                print(
                    f"  {days:g} d {name}: read {got['read'][-1]:.2f} s, export {got['export'][-1]:.2f} s "
                    f"(x {got['export'][-1] / got['read'][-1]:.2f}; CPU x {got['export_cpu'][-1] / got['read_cpu'][-1]:.2f}), "
                    f"load {got['load'][-1]}",
                    file=sys.stderr,
                )
        for name, got in timings.items():
            ratios = [w / r for w, r in zip(got["export"], got["read"])]
            figures[name] = {
                "read_s": round(statistics.median(got["read"]), 2),
                "export_s": round(statistics.median(got["export"]), 2),
                "export_over_read": round(statistics.median(ratios), 2),
                "export_over_read_all": [round(x, 2) for x in ratios],
                "cpu_export_over_read": round(statistics.median(w / r for w, r in zip(got["export_cpu"], got["read_cpu"])), 2),
                "load_average": got["load"],
                "dataset_mb": got["dataset_mb"][-1],  # each case's own writer (the same files each round)
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ref", default="0a410cc", help="git ref of the dataset writer to compare with")
    parser.add_argument("--days", type=float, nargs="+", help="export --dataset against read_ftdc on a node of these lengths")
    parser.add_argument("--before", help="with --days: also ftdc/dataset.py as of this git ref, in this process")
    args = parser.parse_args()
    if args.days:
        warnings.simplefilter("ignore")
        print(json.dumps({f"{days:g}d": against_reading(days, args.rounds, args.before) for days in args.days}, indent=1))
        return
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
