"""FTDC decode benchmark: ratios to an inflate-only floor, measured in one run.

    python -m bench.bench_ftdc [--copies 40] [--repeat 3]

Builds bench/data/ftdc-<copies>/ from renamed copies of the real 7.0 archive
file (from ../shared/samples), then times, in this process and side by side:
  floor      read every file, parse the BSON envelopes, zlib-inflate every chunk (Python)
  20 / 100   read_ftdc of 20 / 100 metrics spread over the whole document, all files
  all        read_ftdc of every metric over 4 files (values per second)
and, in a fresh subprocess, the peak RSS of the 100-metric read.
Machines here are shared and noisy: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

import bson

import ftdc
from bench import megabytes

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "samples" / "ftdc" / "mongod-7.0" / "diagnostic.data" / "metrics.2024-04-16T11-34-42Z-00000"


def build(copies: int) -> Path:
    target = ROOT / "bench" / "data" / f"ftdc-{copies}"
    if target.exists() and len(list(target.glob("metrics.*"))) == copies:
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for i in range(copies):
        shutil.copyfile(SOURCE, target / f"metrics.2024-04-16T11-34-42Z-{i:05d}")
    return target


def inflate_floor(files: list[Path]) -> int:
    inflated = 0
    for f in files:
        for doc in bson.decode_all(f.read_bytes()):
            if doc["type"] == 1:
                inflated += len(zlib.decompress(doc["data"][4:]))
    return inflated


def timed(action, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
        del result
        result = None
    start = time.perf_counter()
    result = action()
    times.append(time.perf_counter() - start)
    return statistics.median(times), result


def spread(names: list[str], n: int) -> list[str]:
    """n metric names evenly spaced through the document, so decoding must reach its end."""
    step = len(names) / n
    return [names[int(i * step)] for i in range(n)]


def peak_rss_mb(directory: Path, metrics: list[str]) -> float:
    # VmHWM, not ru_maxrss: Linux carries the forking parent's peak into the
    # child's ru_maxrss across exec, which would report this process's peak.
    code = (
        "import sys, ftdc, json;"
        f"f = ftdc.read_ftdc({str(directory)!r}, metrics=json.loads(sys.argv[1]));"
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(metrics)], capture_output=True, text=True, check=True, cwd=ROOT)
    return megabytes(int(out.stdout))


def cold_all_seconds(files: list[Path]) -> float:
    """The every-metric read as the first thing a fresh process does."""
    code = (
        # Imported before the clock starts: `ftdc` loads its readers on first use.
        "import sys, time; from ftdc import read_ftdc;"
        "t = time.perf_counter(); read_ftdc(sys.argv[1:]); print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code, *map(str, files)], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    directory = build(args.copies)
    files = sorted(directory.glob("metrics.*"))
    names = [n for n in ftdc.list_metrics(directory)["name"].to_list() if n != "start"]
    m20, m100 = spread(names, 20), spread(names, 100)
    size_mb = sum(f.stat().st_size for f in files) / 1e6

    floor, inflated = timed(lambda: inflate_floor(files), args.repeat)
    t20, f20 = timed(lambda: ftdc.read_ftdc(directory, m20), args.repeat)
    t100, f100 = timed(lambda: ftdc.read_ftdc(directory, m100), args.repeat)
    four = files[:4]
    tall, fall = timed(lambda: ftdc.read_ftdc(four), args.repeat)
    values_all = fall.height * (fall.width - 1) - sum(fall.null_count().row(0))
    floor4, _ = timed(lambda: inflate_floor(four), args.repeat)
    cold = statistics.median(cold_all_seconds(four) for _ in range(args.repeat))
    rss = peak_rss_mb(directory, m100)

    report = {
        "files": len(files),
        "size_mb": round(size_mb, 1),
        "inflated_mb": round(inflated / 1e6, 1),
        "rows_all_files": f20.height,
        "floor_s": round(floor, 3),
        "read_20_metrics_s": round(t20, 3),
        "read_20_over_floor": round(t20 / floor, 2),
        "read_100_metrics_s": round(t100, 3),
        "read_100_over_floor": round(t100 / floor, 2),
        "read_all_4_files_s": round(tall, 3),
        "read_all_4_files_over_floor_4": round(tall / floor4, 2),
        "values_all_4_files": values_all,
        "values_per_s_all": round(values_all / tall / 1e6, 1),
        "read_all_4_files_cold_s": round(cold, 3),
        "values_per_s_all_cold": round(values_all / cold / 1e6, 1),
        "peak_rss_100_metrics_mb": round(rss),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    print(json.dumps(report, indent=1))
    print(
        f"\nfloor {floor:.3f}s | 20 metrics {t20 / floor:.2f}x floor (target <= 1.5) | "
        f"100 metrics {t100 / floor:.2f}x floor (target <= 2) | every metric, 4 files: "
        f"{values_all / tall / 1e6:.0f} M values/s warm, {values_all / cold / 1e6:.0f} M cold (target >= 500) | "
        f"peak RSS 100 metrics {rss:.0f} MB (target < 1024)"
    )


if __name__ == "__main__":
    main()
