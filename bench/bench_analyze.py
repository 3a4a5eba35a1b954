"""Benchmark of `analysis.analyze` on 1 to 7 days of one node (issues 6 §5, 22).

Builds, once per length, under bench/data/analyze-<days>d/:
  diagnostic.data/  7 days at 1 s written by ftdc.writer in the real 7.0
                    layout (the 2,323 metrics of the 7.0 sample's first file):
                    its recorded samples replayed with counters carried on and
                    noise added, requests finished every second at varying
                    latencies (a busy node's), ~200 MB in 10 MB files as mongod writes them
  mongod.log        ~1 GB of JSON log: the 6.0.11 sample's lines repeated,
                    each copy moved to a later point of the week
then measures, side by side in one process, alternating rounds, the load average
(os.getloadavg) recorded around each round:
  FTDC only (issue 22: analyze <= 1.5 x its floor, the report's work <= 0.25 x the analysis')
    floor    read_ftdc of just the metrics the analyses use
    analyze  analysis.analyze(diagnostic.data)
    report   building the incident report of that analysis and writing it as HTML
  with the log (--log; the log is built only then)
    floor    the same read_ftdc + read_logs
    analyze  analysis.analyze(diagnostic.data, mongod.log)
    report   the report of that analysis, its metric explorer of the derived series
             included (issue 7: at most 50 % of the analysis time; issue 22: 25 %;
             the HTML under 5 MB)
    explore  what `ftdc-analyze explore` adds to that analysis: the default recorded metrics
             (the detectors' and the system's) reduced to their extremes per pixel column,
             and the page written (issue 20 §4: the page under 10 MB)
    incidents  grouping that analysis's findings into incidents again (part of analyze;
             issue 12: at most 5 % of it)
  and, with --log, the peak RSS (VmHWM) of analyze in a fresh subprocess, and of
  `ftdc-analyze DIR --log mongod.log --report report.html` as a whole process (issue 38:
  a week and the 1 GB log within 1 GB); `--against CHECKOUT` alternates that command with
  another checkout's (the code before a change), `--peak-only` measures only those peaks.
Each figure is a ratio of two timings of one round; the median over rounds is reported.

    python -m bench.bench_analyze [--days 1 2 4 7] [--rounds 3] [--log] [--analysis-only]
        [--peak-only] [--against CHECKOUT]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import ftdc
from bench import megabytes
from ftdc import _native
from ftdc.writer import FTDCWriter

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "samples"
SOURCE = SHARED / "ftdc" / "mongod-7.0" / "diagnostic.data" / "metrics.2024-04-16T11-34-42Z-00000"
LOG_SAMPLE = SHARED / "logs" / "mongod-6.0.11" / "sample-mongod.log.gz"

# The log sample's first line; the week starts here so every copy lands inside it.
T0 = dt.datetime(2023, 9, 23, 20, 0, tzinfo=dt.timezone.utc)
# Share of the counters that move every second on top of the recording (a busy
# node's operation, byte and time counters), sized for ~200 MB a week.
NOISY = 0.5
# An incident every INCIDENT_EVERY samples, lasting INCIDENT_S: the cache past its
# triggers with application threads evicting, write tickets gone with writers queued,
# write latency up, so the report has findings (and evidence plots) to carry.
INCIDENT_EVERY, INCIDENT_S = 8 * 3600, 300
WT = "serverStatus.wiredTiger."


def _real_samples() -> tuple[bytes, np.ndarray, np.ndarray, list[str]]:
    """The reference document, int64 rows, Date-column mask and metric names of the source file's main layout."""
    import bson

    decoded = [_native.decode_chunk(bytes(d["data"])) for d in bson.decode_all(SOURCE.read_bytes()) if d["type"] == 1]
    counts = [m for _, _, m, _ in decoded]
    metric_count = max(set(counts), key=counts.count)
    reference = next(r for r, _, m, _ in decoded if m == metric_count)
    rows = np.concatenate([np.frombuffer(v, dtype="<i8").reshape(n, m) for _, n, m, v in decoded if m == metric_count])
    names, kinds = next(layout for layout in ftdc.read_catalog(SOURCE).layouts if len(layout[0]) == metric_count)
    return reference, rows, np.array([k == 2 for k in kinds]), list(names)


class _Busy:
    """A busy node's requests (the recording's node was idle): every second each class finishes a few hundred
    operations at a mean latency near half a millisecond, varying, so the latency baselines and spike tests work on
    real values, as they do on a customer's node, not on empty series."""

    CLASSES = ("reads", "writes", "commands")

    def __init__(self, names: list[str], rng: np.random.Generator):
        at = {name: i for i, name in enumerate(names)}
        self.ops = [at[f"serverStatus.opLatencies.{op}.ops"] for op in self.CLASSES]
        self.latency = [at[f"serverStatus.opLatencies.{op}.latency"] for op in self.CLASSES]
        self.rng = rng
        self.added = np.zeros(len(names), dtype=np.int64)

    def apply(self, values: np.ndarray) -> np.ndarray:
        finished = self.rng.integers(200, 800, size=len(self.ops))
        self.added[self.ops] += finished
        self.added[self.latency] += (finished * self.rng.gamma(4.0, 125.0, size=len(self.ops))).astype(np.int64)
        return values + self.added


class _Incident:
    """Overrides a few metrics of a sample while an incident runs (by metric name)."""

    def __init__(self, names: list[str]):
        at = {name: i for i, name in enumerate(names)}
        self.max = at[WT + "cache.maximum bytes configured"]
        self.gauges = {
            at[WT + "cache.bytes currently in the cache"]: 0.96,
            at[WT + "cache.tracked dirty bytes in the cache"]: 0.22,
        }
        self.tickets = (
            at[WT + "concurrentTransactions.write.available"],
            at[WT + "concurrentTransactions.write.out"],
            at[WT + "concurrentTransactions.write.totalTickets"],
            at[WT + "concurrentTransactions.write.normalPriority.queueLength"],
        )
        # Counters, per second while it runs: pages evicted, µs evicting, µs waiting for cache, µs queued, write latency µs.
        self.rates = {
            at[WT + "cache.pages evicted by application threads"]: 600,
            at[WT + "thread-yield.application thread time evicting (usecs)"]: 3_000_000,
            at[WT + "thread-yield.application thread time waiting for cache (usecs)"]: 8_000_000,
            at[WT + "concurrentTransactions.write.normalPriority.totalTimeQueuedMicros"]: 30_000_000,
            at["serverStatus.opLatencies.writes.latency"]: 40_000_000,
            at["serverStatus.opLatencies.writes.ops"]: 1000,
        }
        self.added = np.zeros(len(names), dtype=np.int64)

    def apply(self, values: np.ndarray, running: bool) -> np.ndarray:
        if running:
            for i, rate in self.rates.items():
                self.added[i] += rate
        out = values + self.added
        if running:
            for i, share in self.gauges.items():
                out[i] = int(share * out[self.max])
            available, held, total, queue = self.tickets
            out[available], out[held], out[queue] = 0, out[total], 30
        return out


def build_ftdc(target: Path, days: float) -> Path:
    if (target / "complete").exists():
        return target
    reference, real, date, names = _real_samples()
    incident = _Incident(names)
    rng = np.random.default_rng(7)
    busy = _Busy(names, rng)
    samples = int(days * 86_400)
    start_ms = int(T0.timestamp() * 1000)
    steps = np.diff(real, axis=0)
    # Counters (never decreasing in the recording) carry on; gauges replay their values.
    counter = (steps >= 0).all(axis=0) & (steps != 0).any(axis=0)
    moving = counter & (rng.random(real.shape[1]) < NOISY)
    moving_count = int(moving.sum())
    values = real[0].copy()
    writer = FTDCWriter(target, metadata=None, samples_per_interim_update=1 << 30)
    offset = (real[:, date] - real[:, date][:, :1].min(axis=1, keepdims=True)) if date.any() else None
    for i in range(samples):
        r = i % len(real)
        if i:
            step = steps[(i - 1) % len(steps)]
            values[counter] += step[counter]
            values[~counter] = real[r, ~counter]
            values[moving] += rng.integers(0, 1000, size=moving_count)
        if offset is not None:
            values[date] = start_ms + i * 1000 + offset[r]
        sample = incident.apply(busy.apply(values), i % INCIDENT_EVERY >= INCIDENT_EVERY - INCIDENT_S)
        writer.add_sample(_native.fill_reference(reference, sample.astype("<i8").tobytes()))
        if i % 86_400 == 0:
            print(f"  day {i // 86_400 + 1} of {days:g}", file=sys.stderr)
    writer.close()
    (target / "complete").write_text("")
    return target


_DATE = re.compile(rb'"\$date":"([^"]+)"')


def build_log(target: Path, days: float, gigabytes: float = 1.0) -> Path:
    if target.exists():
        return target
    sample = gzip.decompress(LOG_SAMPLE.read_bytes())
    copies = max(1, round(gigabytes * 1e9 / len(sample)))
    stamps = {m: dt.datetime.fromisoformat(m.decode()) for m in set(_DATE.findall(sample))}
    first = min(stamps.values())
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for k in range(copies):
            shift = dt.timedelta(days=days) * k / copies + (T0 - first) + dt.timedelta(minutes=5)
            moved = {
                old: (when + shift).astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z"
                for old, when in stamps.items()
            }
            out.write(_DATE.sub(lambda m, moved=moved: b'"$date":"' + moved[m.group(1)] + b'"', sample))
    partial.rename(target)
    return target


def needed_metrics(directory: Path) -> list[str]:
    from analysis.series.metrics import resolve

    return resolve(ftdc.read_catalog(directory).schema()).wanted


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def peak_rss_mb(directory: Path, log: Path) -> float:
    code = (
        "import sys, warnings; warnings.simplefilter('ignore'); import analysis;"
        "a = analysis.analyze(sys.argv[1], sys.argv[2]);"
        "print(len(a.findings)); print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(directory), str(log)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return megabytes(int(out.stdout.split()[-1]))


# Issue 38: a week of FTDC with a 1 GB log and `--report` within 1 GB.
WEEK_TARGET_MB = 1000


def report_peak_mb(directory: Path, log: Path, html: Path, root: Path = ROOT) -> tuple[float, float]:
    """Peak RSS (VmHWM, MB) and wall time (s) of `ftdc-analyze DIR --log LOG --report HTML` as a whole process (of the
    checkout at `root`)."""
    code = "\n".join(
        [
            "import runpy, sys",
            "sys.argv = ['ftdc-analyze', *sys.argv[1:]]",
            "try:",
            "    runpy.run_path('cli.py', run_name='__main__')",
            "finally:",
            "    print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr)",
        ]
    )
    args = [str(directory.resolve()), "--log", str(log.resolve()), "--report", str(html.resolve())]
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=root, env=env)
    seconds = time.perf_counter() - start
    if out.returncode:
        raise RuntimeError(out.stderr)
    return megabytes(int(out.stderr.split()[-1])), seconds


def median(values) -> float:
    return round(statistics.median(values), 2)


def measure(directory: Path, log: Path | None, rounds: int, html: Path, page: Path, outputs: bool = True) -> dict:
    """Median ratios over `rounds` alternating rounds of floor, analyze, report and explore (with `log` when given;
    the report and the explorer only with `outputs`)."""
    import analysis
    from analysis.nodes import compose
    from analysis.outputs.report import build_report, explore, write_explorer, write_report

    metrics = needed_metrics(directory)
    ftdc.read_ftdc(directory, metrics)  # imports (pyarrow loads at the first decode) and the page cache, before any clock
    # Likewise the analysis's once-a-process costs: numpy.ma, which polars imports at its first Series made from numpy
    # (7 ms), and the first memory its allocator maps (a process's first round took 1.65-1.8x its floor, the next
    # ones 1.45-1.55x).
    analysis.analyze(directory)
    floors, analyses, reports, incidents, explores, loads = [], [], [], [], [], []
    for _ in range(rounds):
        load = os.getloadavg()[0]
        floors.append(timed(lambda: (ftdc.read_ftdc(directory, metrics), log and ftdc.read_logs(log))))
        start = time.perf_counter()
        result = analysis.analyze(directory, log)
        analyses.append(time.perf_counter() - start)
        incidents.append(timed(lambda result=result: compose([result])))
        if outputs:
            reports.append(timed(lambda result=result: write_report(build_report([result]), html)))
            explores.append(timed(lambda result=result: write_explorer(explore(result, directory, "bench"), page)))
        loads.append(round((load + os.getloadavg()[0]) / 2, 1))
        print(
            f"  floor {floors[-1]:.2f} s, analyze {analyses[-1]:.2f} s (x {analyses[-1] / floors[-1]:.2f}), "
            + (
                f"report {reports[-1]:.2f} s ({reports[-1] / analyses[-1]:.0%} of the analysis), "
                f"explore {explores[-1]:.2f} s ({explores[-1] / analyses[-1]:.0%} of the analysis), "
                if outputs
                else ""
            )
            + f"load {loads[-1]}",
            file=sys.stderr,
        )
    figures = {
        "floor_s": median(floors),
        "analyze_s": median(analyses),
        "analyze_over_floor": median(a / f for a, f in zip(analyses, floors)),
        "analyze_over_floor_all": [round(a / f, 2) for a, f in zip(analyses, floors)],
        "incidents_over_analysis": round(statistics.median(i / a for i, a in zip(incidents, analyses)), 4),
        "findings": len(result.findings),
        "incidents": len(result.incidents),
        "load_average": loads,
    }
    if outputs:
        figures.update(
            {
                "report_s": median(reports),
                "report_over_analysis": median(r / a for r, a in zip(reports, analyses)),
                "report_html_mb": round(html.stat().st_size / 1e6, 2),
                "explore_over_analysis": median(e / a for e, a in zip(explores, analyses)),
                "explorer_html_mb": round(page.stat().st_size / 1e6, 2),
                "explorer_series": page.read_text().count('"axis":'),
            }
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, nargs="+", default=[7])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log", action="store_true", help="also measure with a 1 GB log (built once per length)")
    parser.add_argument(
        "--analysis-only", action="store_true", help="measure the floor and analyze only, not the report and the explorer"
    )
    parser.add_argument("--peak-only", action="store_true", help="only the peak RSS of the command with the log and --report")
    parser.add_argument("--against", type=Path, help="another checkout whose command's peak alternates with this one's")
    args = parser.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    out = {}
    for days in args.days:
        base = ROOT / "bench" / "data" / f"analyze-{days:g}d"
        base.mkdir(parents=True, exist_ok=True)
        directory = build_ftdc(base / "diagnostic.data", days)
        size_mb = sum(p.stat().st_size for p in directory.glob("metrics.*")) / 1e6
        print(
            f"{days:g} d: FTDC {size_mb:,.0f} MB in {len(list(directory.glob('metrics.*')))} files, "
            f"{len(needed_metrics(directory))} metrics needed of {len(ftdc.read_catalog(directory).schema()) - 1}",
            file=sys.stderr,
        )
        if args.peak_only:
            log = build_log(base / "mongod.log", days)
            peaks: dict[str, list[float]] = {}
            seconds: dict[str, list[float]] = {}
            loads = []
            for _ in range(args.rounds):
                for name, root in (("this checkout", ROOT), ("--against", args.against)):
                    if root is not None:
                        peak, took = report_peak_mb(directory, log, base / "report.html", root)
                        peaks.setdefault(name, []).append(round(peak))
                        seconds.setdefault(name, []).append(round(took, 1))
                        loads.append(round(os.getloadavg()[0], 1))
                        print(f"{name}: {peaks[name][-1]} MB, {took:.1f} s, load {loads[-1]}", file=sys.stderr)
            for name, values in peaks.items():
                print(
                    f"{name}: median {statistics.median(values):,.0f} MB, the most {max(values):,.0f} MB"
                    f" (issue 38's target for a week: <= {WEEK_TARGET_MB:,} MB)",
                    file=sys.stderr,
                )
            out[f"{days:g}d"] = {"report_peak_mb": peaks, "report_s": seconds, "load_average": loads}
            continue
        outputs = not args.analysis_only
        figures = {
            "ftdc_mb": round(size_mb),
            "ftdc_only": measure(directory, None, args.rounds, base / "report.html", base / "explorer.html", outputs),
        }
        if args.log:
            log = build_log(base / "mongod.log", days)
            figures["with_log"] = measure(directory, log, args.rounds, base / "report.html", base / "explorer.html", outputs)
            figures["with_log"]["peak_rss_mb"] = round(peak_rss_mb(directory, log))
        out[f"{days:g}d"] = figures
        print(json.dumps({f"{days:g}d": figures}), file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
