"""This checkout against an older one, side by side (issue 22): each measure runs in fresh
processes, alternating old and new in every round, and the median of the new/old ratios is
reported with the load average.

    git archive <commit> | tar -x -C /tmp/old    # plus that commit's built extension in /tmp/old/ftdc/
    python -m bench.bench_before_after --old /tmp/old [--days 1] [--rounds 5] [--only WORD ...]

Measures: `ftdc-analyze --version`; `analyze` of the bench's FTDC-only node (bench_analyze
builds it); `read_ftdc` of the metrics the analyses use (the decoder must not regress);
`read_ftdc` of 20 metrics over bench_ftdc's 40 files; `read_ftdc` of every metric of 4 of
them as the first read of a fresh process (building the frame bounds it), with its peak RSS;
deriving the series of the node (`prepare` and `derive` of a frame already read); and `read_logs` of the 0.25 GB
logs bench_logs builds (the sample's lines, and short slow queries only) as the first read of a fresh process, with
its peak RSS.
`--only` keeps the measures whose names contain one of its words (`--only derive analyze`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench import megabytes

ROOT = Path(__file__).resolve().parents[1]

# Each prints the seconds its work took, imports outside the clock (pyarrow too: an older
# `import ftdc` loaded it at once, this one at the first decode), except for --version.
ANALYZE = (
    "import sys, time, warnings, pyarrow; warnings.simplefilter('ignore'); from analysis import analyze;"
    "t = time.perf_counter(); analyze(sys.argv[1]); print(time.perf_counter() - t)"
)
READ = """
import sys, time, warnings, pyarrow
warnings.simplefilter('ignore')
from ftdc import read_ftdc, read_catalog
try:
    from analysis.series.metrics import resolve
except ImportError:  # a checkout before analysis/ was regrouped (9fc7e34)
    from analysis.metrics import resolve
m = resolve(read_catalog(sys.argv[1]).schema()).wanted
t = time.perf_counter(); read_ftdc(sys.argv[1], m); print(time.perf_counter() - t)
"""
# Deriving the series alone (issue 22's lazy plan): prepare and derive of a read frame. Both checkouts must be
# after analysis/ was regrouped (9fc7e34), where these modules live.
DERIVE = """
import sys, time, warnings, pyarrow
warnings.simplefilter('ignore')
from ftdc.metadata import catalog_metadata
from ftdc.paths import resolve as files_of
from ftdc.reader import read_with_catalog
from analysis.series import derived
from analysis.series.metrics import candidates, resolve
from analysis.series.thresholds import effective_thresholds
catalog, raw = read_with_catalog(files_of(sys.argv[1]), candidates(), None, None)[:2]
resolved, metadata = resolve(catalog.schema()), catalog_metadata(catalog)
t = time.perf_counter()
prepared = derived.prepare(raw, resolved)
derived.derive(prepared, resolved, effective_thresholds(metadata, [], prepared.filter(prepared['restart'])['start'].to_list()))
print(time.perf_counter() - t)
"""
READ_20 = (
    "import sys, time, warnings, pyarrow; warnings.simplefilter('ignore'); from ftdc import read_ftdc, list_metrics;"
    "names = [n for n in list_metrics(sys.argv[1])['name'].to_list() if n != 'start']; m = [names[i * len(names) // 20] for i in range(20)];"
    "t = time.perf_counter(); read_ftdc(sys.argv[1], m); print(time.perf_counter() - t)"
)
READ_ALL = (
    "import sys, time, warnings, pyarrow; warnings.simplefilter('ignore'); from ftdc import read_ftdc;"
    "t = time.perf_counter(); read_ftdc(sys.argv[1:]); s = time.perf_counter() - t;"
    "print(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]), s)"
)
# `read_logs` of a JSON log, every column, in a fresh process: its peak RSS and seconds.
READ_LOGS = (
    "import sys, time, warnings, pyarrow; warnings.simplefilter('ignore'); from ftdc import read_logs;"
    "t = time.perf_counter(); read_logs(sys.argv[1]); s = time.perf_counter() - t;"
    "print(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]), s)"
)
VERSION = (
    "import subprocess, sys, time; t = time.perf_counter();"
    "subprocess.run([sys.executable, '-m', 'cli', '--version'], check=True, stdout=subprocess.DEVNULL); print(time.perf_counter() - t)"
)


def run(checkout: Path, code: str, *args: str) -> list[float]:
    """What the code printed: its seconds last, any other figure (a peak RSS, KiB) before them."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=checkout, env=env)
    return [float(x) for x in out.stdout.split()]


def medians(pairs: list[tuple[float, float]]) -> list[float]:
    """The median old and the median new figure."""
    return [round(statistics.median(x), 2) for x in zip(*pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    node = ROOT / "bench" / "data" / f"analyze-{args.days:g}d" / "diagnostic.data"
    forty = ROOT / "bench" / "data" / "ftdc-40"
    measures = {
        "--version": (VERSION,),
        f"analyze {args.days:g} d": (ANALYZE, str(node)),
        f"read_ftdc analyses' metrics {args.days:g} d": (READ, str(node)),
        "read_ftdc 20 metrics of 40 files": (READ_20, str(forty)),
        "read_ftdc every metric of 4 files, fresh process": (READ_ALL, *map(str, sorted(forty.glob("metrics.*"))[:4])),
        f"derive {args.days:g} d": (DERIVE, str(node)),
        # bench_logs builds both logs (`python -m bench.bench_logs --gb 0.25`).
        "read_logs 0.25 GB log, fresh process": (READ_LOGS, str(ROOT / "bench" / "data" / "mongod-6.0.11-0.25GB.log")),
        "read_logs 0.25 GB of short slow queries, fresh process": (
            READ_LOGS,
            str(ROOT / "bench" / "data" / "short-slow-0.25GB.log"),
        ),
    }
    measures = {name: m for name, m in measures.items() if not args.only or any(word in name for word in args.only)}
    # Per measure, per round: (old, new) seconds, and peak RSS where the measure prints one.
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
    peaks: dict[str, list[tuple[float, float]]] = {}
    loads = []
    for _ in range(args.rounds):
        loads.append(round(os.getloadavg()[0], 1))
        for name, (code, *rest) in measures.items():
            *old_peak, old = run(args.old, code, *rest)
            *new_peak, new = run(ROOT, code, *rest)
            seconds[name].append((old, new))
            if old_peak:
                peaks.setdefault(name, []).append((megabytes(old_peak[0]), megabytes(new_peak[0])))
            print(f"  {name}: old {old:.2f} s, new {new:.2f} s", file=sys.stderr)
    ratios = {name: [new / old for old, new in pairs] for name, pairs in seconds.items()}
    print(
        json.dumps(
            {
                "new_over_old_median": {n: round(statistics.median(r), 2) for n, r in ratios.items()},
                "new_over_old_all": {n: [round(x, 2) for x in r] for n, r in ratios.items()},
                "old_new_seconds_median": {n: medians(p) for n, p in seconds.items()},
                "peak_rss_mb_old_new_median": {n: medians(p) for n, p in peaks.items()},
                "load_average": loads,
                "rounds": args.rounds,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
